public import GuestPassPostgres
import NIOConcurrencyHelpers

/// Where read-only requests run (read-only RPC, table reads): on the read replica (`GUESTPASS_DATABASE_READ_URL`), or
/// on the primary when there is none or it cannot answer. The store names no metric: each fallback is reported through
/// `onReplicaFallback`, which GuestPassApp points at its `ServiceMetrics`, the one home of metric names.
public struct ReadRouting: Sendable {
    let primary: PostgresPool
    let replica: PostgresPool
    let backoff = ReplicaBackoff()
    let onReplicaFallback: @Sendable () -> Void

    /// `replica` nil: every read runs on `primary`. `onReplicaFallback` runs each time a read falls back to the primary.
    public init(primary: PostgresPool, replica: PostgresPool?, onReplicaFallback: @escaping @Sendable () -> Void = {}) {
        self.primary = primary
        self.replica = replica ?? primary
        self.onReplicaFallback = onReplicaFallback
    }

    /// Runs `statements` in a read-only request transaction on the replica, or on the primary when the replica cannot
    /// answer — down, unreachable, out of connections, or a recovery conflict cancelled the query: a read may run
    /// twice, and the primary holds everything the replica does. Errors of the request itself (a bad argument, a
    /// refused caller) are the answer, from wherever they came. After a failure the replica is left alone for
    /// `ReplicaBackoff.pause`, so a replica that hangs instead of refusing costs one slow call, not one per read.
    public func run(_ identity: RequestIdentity, _ statements: [PostgresStatement]) async throws -> [PostgresResult] {
        guard self.replica !== self.primary, self.backoff.mayTry() else {
            return try await self.primary.requestTransaction(identity, readOnly: true, statements)
        }
        do {
            return try await self.replica.requestTransaction(identity, readOnly: true, statements)
        } catch let error as PostgresError
            where error.isConnectionError || error.kind == .acquireTimeout || error.sqlState?.isUnavailability == true
            || error.sqlState == .serializationFailure
        {
            self.onReplicaFallback()
            if error.kind != .acquireTimeout, error.sqlState != .serializationFailure { self.backoff.failed() }
            return try await self.primary.requestTransaction(identity, readOnly: true, statements)
        }
    }
}

/// When the read replica last failed to answer: reads skip it for `pause` after that, then try it again.
final class ReplicaBackoff: Sendable {
    static let pause: Duration = .seconds(5)
    private let failedAt = NIOLockedValueBox<ContinuousClock.Instant?>(nil)

    func mayTry() -> Bool {
        self.failedAt.withLockedValue { $0.map { ContinuousClock.now - $0 >= Self.pause } ?? true }
    }

    func failed() { self.failedAt.withLockedValue { $0 = ContinuousClock.now } }
}
