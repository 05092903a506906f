import Hummingbird
import NIOCore

/// The console's request context: Hummingbird's storage and the peer's address (the sign-in rate limit's key).
struct ConsoleRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// The peer's IP address as text ("unknown" without one).
    var clientAddress: String { self.remoteAddress?.ipAddress ?? "unknown" }
}
