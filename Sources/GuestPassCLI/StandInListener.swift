import ArgumentParser
import GuestPassApp
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals

extension Listener {
    /// The listener of a stand-in command (`devicecheck-standin`, `apple-standin`), moved by its `--host` and `--port`.
    static func standIn(_ command: CommandConfiguration, host: String, port: Int) -> Listener {
        Listener(name: "\(command.commandName ?? "stand-in") listener", host: host, port: port, setting: "--host/--port")
    }
}

/// Runs a stand-in's application until SIGTERM or SIGINT, as `runService()` does, its address checked first and a
/// failure to bind named (`ListenerError`), as `serve`'s listeners are.
func runStandIn(_ app: some ApplicationProtocol, listener: Listener, logger: Logger) async throws {
    try await listener.checkAvailable()
    let group = ServiceGroup(
        configuration: .init(services: [ListenerService(app, listener: listener)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    )
    try await group.run()
}
