// Hummingbird 2.28 with one route and no middleware, Swift concurrency's jobs on NIO's event loops as `guestpass`
// runs them: what Hummingbird's request model costs before GuestPass adds anything. `HummingbirdFloor PORT` listens
// on 127.0.0.1:PORT until killed.
import Hummingbird
import NIOCore
import NIOPosix

guard CommandLine.arguments.count == 2, let port = Int(CommandLine.arguments[1]) else { fatalError("usage: HummingbirdFloor PORT") }
_ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
let router = Router()
router.get("/health/live") { _, _ -> Response in
    Response(
        status: .ok, headers: [.contentType: "application/json"],
        body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
}
let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
try await app.runService()
