import ArgumentParser
import Foundation
import GuestPassApp
import Hummingbird
import Metrics
import Prometheus
import ServiceLifecycle
import UnixSignals

/// `guestpass serve`: runs the HTTP service until SIGTERM/SIGINT, then shuts down gracefully: readiness 503 for the
/// drain (`GUESTPASS_SHUTDOWN_DRAIN_MS`), then no new connections, the requests in flight finished, exit 0.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the HTTP service.")

    func run() async throws {
        var configuration: AppConfiguration
        do {
            configuration = try AppConfiguration(environment: ProcessInfo.processInfo.environment)
        } catch let error as ConfigurationError {
            throw ValidationError(error.description)
        }
        let logger = bootstrapLogging(label: "guestpass", level: configuration.logLevel)
        // Every listener's address first: a taken one stops here, named (`ListenerError`), before anything listens.
        for listener in configuration.listeners { try await listener.checkAvailable() }
        if configuration.metricsAddress != nil {
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
            configuration.metricsRegistry = registry
        }
        // An S3 store's bucket is made when missing (a fresh SeaweedFS, a dev set-up); an existing one is left as it is.
        try await configuration.storage.prepare()
        let app = try buildApplication(configuration: configuration, logger: logger)
        // SIGTERM: ShutdownDrain (last, so first to hear it) turns readiness 503 and waits the drain; then the server
        // stops accepting connections and finishes the requests in flight; then the pool closes.
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    ListenerService(app, listener: configuration.apiListener),
                    ShutdownDrain(gate: configuration.readiness, drain: configuration.shutdownDrain),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger
            )
        )
        try await group.run()
    }
}
