import Foundation

/// A PostgreSQL cluster of a test's own (for tests that restart the server), managed with `scripts/pg-cluster`
/// (`GUESTPASS_PG_CLUSTER`, exported by `./scripts/test`).
public struct ThrowawayCluster: Sendable {
    public let directory: String
    /// Superuser URL of the cluster's `postgres` database.
    public let url: String
    private let script: String

    /// Creates and starts a new cluster in a temporary directory.
    public static func create() async throws -> ThrowawayCluster {
        guard let script = ProcessInfo.processInfo.environment["GUESTPASS_PG_CLUSTER"], !script.isEmpty else {
            throw ClusterError("GUESTPASS_PG_CLUSTER is not set: run the tests with ./scripts/test")
        }
        let directory = "/tmp/gp-cluster-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try Self.run(script, ["create", directory])
        let url = try Self.run(script, ["url", directory, "postgres", "postgres"]).trimmingCharacters(in: .whitespacesAndNewlines)
        return ThrowawayCluster(directory: directory, url: url, script: script)
    }

    /// `pg_ctl restart -m fast`: every session is terminated, the server comes back on the same port.
    public func restart() throws { try Self.run(self.script, ["restart", self.directory]) }

    /// Stops the server (`pg_ctl stop -m fast`); `start` brings it back on the same port.
    public func stop() throws { try Self.run(self.script, ["stop", self.directory]) }

    /// Starts a stopped server.
    public func start() throws { try Self.run(self.script, ["start", self.directory]) }

    /// Stops the server and deletes the cluster.
    public func destroy() { _ = try? Self.run(self.script, ["destroy", self.directory]) }

    @discardableResult
    private static func run(_ script: String, _ arguments: [String]) throws -> String {
        let outcome = try ChildProcess.runBlocking(script, arguments)
        guard outcome.status == 0 else {
            throw ClusterError("pg-cluster \(arguments.joined(separator: " ")) exited with \(outcome.status): \(outcome.errors)")
        }
        return outcome.output
    }
}

/// The throwaway cluster could not be managed.
public struct ClusterError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
