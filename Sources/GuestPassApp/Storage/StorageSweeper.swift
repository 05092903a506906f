import Foundation
public import GuestPassObjectStore
public import GuestPassPostgres
import GuestPassStore
import Logging
import ServiceLifecycle

/// Deletes the bytes nothing references any more, in its backend's store only: the previous versions of replaced and
/// removed objects (due 30 seconds after the change, so downloads in flight finish), and with `uploads` the reservations of uploads that never wrote their row, past their grace period
/// (orphans of a crash or a kill -9). Keys are leased (`storage_sweep_claim`), their bytes deleted, then their rows
/// (`storage_sweep_done`): a sweeper that dies mid-batch leaves its lease to run out, and another takes the keys again;
/// a delete of bytes already gone succeeds, so a key swept twice is harmless.
public struct StorageSweep: Sendable {
    let pool: PostgresPool
    let backend: any ObjectBackend
    /// How long a claimed key stays with its sweeper.
    static let leaseSeconds = 300

    public init(pool: PostgresPool, backend: any ObjectBackend) {
        self.pool = pool
        self.backend = backend
    }

    /// One batch: the number of keys whose bytes are gone.
    public func sweepBatch(limit: Int = 500, uploads: Bool) async throws -> Int {
        let claimed = try await self.pool.withConnection { connection in
            try await connection.run {
                try $0.execute(
                    StorageStatements.sweepClaim(store: self.backend.store, limit: limit, leaseSeconds: Self.leaseSeconds, uploads: uploads))
            }
        }
        let keys = try claimed.rows.map { try $0.decode(String.self, "key") }
        guard !keys.isEmpty else { return 0 }
        var done: [String] = []
        for key in keys {
            do {
                try await self.backend.delete(key)
                done.append(key)
            } catch {
                continue  // Retried when the lease runs out.
            }
        }
        if !done.isEmpty {
            let done = done
            _ = try await self.pool.withConnection { connection in
                try await connection.run { try $0.execute(StorageStatements.sweepDone(done)) }
            }
        }
        ServiceMetrics.storageSwept(done.count)
        return done.count
    }

    /// Sweeps until nothing is due; the total.
    public func sweepAll(uploads: Bool) async throws -> Int {
        var total = 0
        while true {
            let count = try await self.sweepBatch(uploads: uploads)
            total += count
            if count == 0 { return total }
        }
    }
}

/// The sweep as a service of `guestpass serve`: replaced and removed versions every `interval` (orphaned uploads are
/// `guestpass prune`'s, after their grace period). It owns the backend's lifetime: at shutdown it releases it.
struct StorageSweeper: Service, CustomStringConvertible {
    let sweep: StorageSweep
    let interval: Duration
    let logger: Logger
    var description: String { "StorageSweeper" }

    func run() async throws {
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                do {
                    _ = try await self.sweep.sweepAll(uploads: false)
                } catch {
                    self.logger.warning("storage sweep failed; retrying", metadata: ["error": "\(type(of: error))"])
                }
                try? await Task.sleep(for: self.interval)
            }
        } onGracefulShutdown: {
        }
        try? await self.sweep.backend.shutdown()
    }
}
