import NIOCore
import NIOPosix

extension Listener {
    /// Binds the listener's address once, as Hummingbird will (`SO_REUSEADDR`, the host resolved the same way), and
    /// lets it go. `serve` checks every listener this way before anything starts, so a taken or impossible address
    /// stops it with a `ListenerError` and no "listening on" line from another listener before it.
    ///
    /// A check, not a reservation: another process may take the address between this check and the real bind; the
    /// `ListenerService` running the server names that failure too. Port 0 always passes.
    public func checkAvailable() async throws(ListenerError) {
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .bind(host: self.host, port: self.port).get()
        } catch {
            throw ListenerError(listener: self, reason: ListenerError.Reason(bindError: error) ?? .other("\(error)"))
        }
        try? await channel.close()
    }
}
