import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1

extension HTTPServerBuilder {
    /// HTTP/1.1 with the WebSocket upgrade of `/realtime/v1/websocket` (decided by `webSocketRouter`), answering a
    /// request the HTTP parser refuses (a NUL or DEL in a header, …) with 400, as the plain HTTP/1.1 server does.
    ///
    /// Hummingbird's upgrade channel turns the parser's error handling off and, before its upgrade decision, nothing
    /// answers such a request: the connection hangs until the client gives up. `RefuseUnparsableRequest`, right behind
    /// the request decoder, answers a parse error itself.
    static func http1WithRealtime(
        webSocketRouter: Router<AppRequestContext>, configuration: HTTP1WebSocketUpgradeChannel.Configuration
    ) -> HTTPServerBuilder {
        let webSocketResponder = webSocketRouter.buildResponder()
        return HTTPServerBuilder { responder in
            RealtimeServerChannel(
                upgrading: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: configuration))
        }
    }
}

/// `HTTP1WebSocketUpgradeChannel` with `RefuseUnparsableRequest` added behind its upgrade handler.
struct RealtimeServerChannel: ServerChildChannel {
    let upgrading: HTTP1WebSocketUpgradeChannel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1WebSocketUpgradeChannel.Value> {
        self.upgrading.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Right behind the request decoder, so its errors reach this handler before the upgrade handler.
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(RefuseUnparsableRequest(), position: .after(decoder))
            return value
        }
    }

    func handle(value: HTTP1WebSocketUpgradeChannel.Value, logger: Logger) async {
        await self.upgrading.handle(value: value, logger: logger)
    }
}

/// Answers an HTTP parse error with `400 Bad Request` and closes the connection. It passes everything else on
/// untouched (request parts, and after an upgrade the socket's bytes), so it can stay for the connection's life.
final class RefuseUnparsableRequest: ChannelInboundHandler {
    typealias InboundIn = Never
    typealias OutboundOut = HTTPServerResponsePart

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else { return context.fireErrorCaught(error) }
        let head = HTTPResponseHead(version: .http1_1, status: .badRequest, headers: ["connection": "close", "content-length": "0"])
        context.write(self.wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(self.wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
    }
}
