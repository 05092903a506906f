import NIOConcurrencyHelpers
public import ServiceLifecycle

/// Whether the server is draining: set when graceful shutdown begins, so `GET /health/ready` answers 503 while the
/// load balancer takes the replica out, before the server stops accepting connections.
public final class ReadinessGate: Sendable {
    private let draining = NIOLockedValueBox(false)

    public init() {}

    public var isDraining: Bool { self.draining.withLockedValue { $0 } }

    func startDraining() { self.draining.withLockedValue { $0 = true } }
}

/// Runs until graceful shutdown (SIGTERM) begins, then marks the gate draining and waits `drain` before returning. Put
/// it after the application in the service group: graceful shutdown goes in reverse order, so readiness turns 503
/// first, and only then does the HTTP server stop accepting connections and finish the requests in flight.
public struct ShutdownDrain: Service, CustomStringConvertible {
    /// What swift-service-lifecycle logs of it.
    public var description: String { "ShutdownDrain" }

    let gate: ReadinessGate
    let drain: Duration

    public init(gate: ReadinessGate, drain: Duration) {
        self.gate = gate
        self.drain = drain
    }

    public func run() async throws {
        try? await gracefulShutdown()
        self.gate.startDraining()
        try? await Task.sleep(for: self.drain)
    }
}
