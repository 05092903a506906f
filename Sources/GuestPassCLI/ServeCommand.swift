import ArgumentParser
import Foundation
import GuestPassApp
import Hummingbird
import Metrics
import Prometheus

/// `guestpass serve`: runs the HTTP service until SIGTERM/SIGINT, then shuts down gracefully.
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
        if configuration.metricsAddress != nil {
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
            configuration.metricsRegistry = registry
        }
        let app = try buildApplication(configuration: configuration, logger: logger)
        try await app.runService()
    }
}
