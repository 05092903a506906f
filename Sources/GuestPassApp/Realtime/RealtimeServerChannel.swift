import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

extension HTTPServerBuilder {
    /// HTTP/1.1 with the WebSocket upgrade of `/realtime/v1/websocket` (decided by `webSocketRouter`), with
    /// `UpgradeRefusals` in the pipeline so that refusals read as they do without the upgrade.
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

/// `HTTP1WebSocketUpgradeChannel` with `UpgradeRefusals` right behind its request decoder.
struct RealtimeServerChannel: ServerChildChannel {
    let upgrading: HTTP1WebSocketUpgradeChannel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1WebSocketUpgradeChannel.Value> {
        self.upgrading.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Behind the request decoder: its errors, and every response, pass here before the upgrade handler's.
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(UpgradeRefusals(), position: .after(decoder))
            return value
        }
    }

    func handle(value: HTTP1WebSocketUpgradeChannel.Value, logger: Logger) async {
        await self.upgrading.handle(value: value, logger: logger)
    }
}

/// What Hummingbird's upgrade channel does not do for a refused request, done here:
///
/// - A request the HTTP parser refuses (a NUL or DEL in a header, …) gets `400 Bad Request` and the connection
///   closes. The upgrade channel turns the parser's error handling off, and before its upgrade decision nothing
///   answers: the connection would hang until the client gave up.
/// - A WebSocket upgrade the Realtime route refused (no or a wrong API key, a secret key in the URL, an unknown `vsn`,
///   too many sockets) gets the route's own status and error body. The upgrade channel answers every refused upgrade
///   with an empty 400; the route leaves its refusal here (`record`), and the empty 400 is swapped for it on the way out.
///
/// Everything else passes untouched (request parts; after an upgrade the socket's frames), so it stays for the
/// connection's life.
final class UpgradeRefusals: ChannelDuplexHandler, Sendable {
    typealias InboundIn = Never
    typealias OutboundIn = Any
    typealias OutboundOut = HTTPServerResponsePart

    private struct Refusal {
        let status: HTTPResponseStatus
        let headers: HTTPHeaders
        let body: [UInt8]
    }

    private let refusal = NIOLockedValueBox<Refusal?>(nil)

    /// Leaves `error` (rendered in the GoTrue dialect) as the answer to the refused upgrade on `channel`.
    static func record(_ error: APIError, request: Request, on channel: any Channel) async {
        guard let handler = try? await channel.pipeline.handler(type: UpgradeRefusals.self).get(),
            let rendered = try? error.rendered(dialect: .goTrue, request: request)
        else { return }
        var headers = HTTPHeaders()
        for field in rendered.headers { headers.add(name: field.name.rawName, value: field.value) }
        headers.replaceOrAdd(name: "connection", value: "close")
        headers.replaceOrAdd(name: "content-length", value: String(rendered.body.count))
        handler.refusal.withLockedValue {
            $0 = Refusal(status: HTTPResponseStatus(statusCode: error.status.code), headers: headers, body: rendered.body)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head(let head)? = self.unwrapOutboundIn(data) as? HTTPServerResponsePart, head.status == .badRequest,
            let refusal = self.refusal.withLockedValue({ state -> Refusal? in
                defer { state = nil }
                return state
            })
        {
            context.write(
                self.wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: refusal.status, headers: refusal.headers))), promise: nil)
            context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: refusal.body)))), promise: promise)
            return
        }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else { return context.fireErrorCaught(error) }
        let head = HTTPResponseHead(version: .http1_1, status: .badRequest, headers: ["connection": "close", "content-length": "0"])
        context.write(self.wrapOutboundOut(.head(head)), promise: nil)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(self.wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
    }
}
