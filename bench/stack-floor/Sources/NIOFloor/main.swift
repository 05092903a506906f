// SwiftNIO's HTTP/1 server and nothing else: one channel handler answers every request from the event loop, with no
// task, no router and no middleware. `NIOFloor PORT` listens on 127.0.0.1:PORT until killed.
import NIOCore
import NIOHTTP1
import NIOPosix

final class FloorResponder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = self.unwrapInboundIn(data) else { return }
        let body = ByteBuffer(string: #"{"status":"ok"}"#)
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: "\(body.readableBytes)")
        context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
    }
}

guard CommandLine.arguments.count == 2, let port = Int(CommandLine.arguments[1]) else { fatalError("usage: NIOFloor PORT") }
let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(FloorResponder())
        }
    }
    .bind(host: "127.0.0.1", port: port).wait()
try channel.closeFuture.wait()
