import Foundation
import GuestPassPostgres
import GuestPassStore
import ServiceLifecycle

/// Sets the gauges of `ServiceHistory` once per bucket, early in it: the pool's connections (open, idle, in use,
/// callers waiting for one: the pool actor's counters), the open Realtime sockets (`RealtimeHub.socketCount`, one
/// lock) and the mail queue (mails not yet sent and the age of the oldest: one query, `guestpass_server.mail_queue_state`,
/// skipped when it fails). A service of the API application: it stops with it.
struct ServiceHistorySampler: Service {
    static let poolOpen = "pool_open"
    static let poolIdle = "pool_idle"
    static let poolInUse = "pool_in_use"
    static let poolWaiting = "pool_waiting"
    static let realtimeSockets = "realtime_sockets"
    static let mailQueued = "mail_queued"
    static let mailOldestAge = "mail_oldest_age"

    /// Where the gauges are read (tests pass their own).
    struct Sources: Sendable {
        var pool: @Sendable () async -> (open: Int, idle: Int, waiting: Int)
        var sockets: @Sendable () -> Int
        var mail: @Sendable () async throws -> (queued: Int, oldestAgeSeconds: Double)
    }

    let history: ServiceHistory
    let sources: Sources

    init(history: ServiceHistory, sources: Sources) {
        self.history = history
        self.sources = sources
    }

    /// Samples `pool`'s statistics, `sockets` and the mail queue through `pool`.
    init(history: ServiceHistory, pool: PostgresPool, sockets: @escaping @Sendable () -> Int) {
        let outbox = MailOutbox(pool: pool)
        self.init(
            history: history,
            sources: Sources(pool: { await pool.statistics }, sockets: sockets, mail: { try await outbox.state() }))
    }

    /// Samples every gauge once, into the current bucket. The pool is read first, so the mail query's own
    /// connection is not counted.
    func sampleOnce() async {
        let pool = await self.sources.pool()
        self.history.sample(Self.poolOpen, Double(pool.open))
        self.history.sample(Self.poolIdle, Double(pool.idle))
        self.history.sample(Self.poolInUse, Double(pool.open - pool.idle))
        self.history.sample(Self.poolWaiting, Double(pool.waiting))
        self.history.sample(Self.realtimeSockets, Double(self.sources.sockets()))
        if let mail = try? await self.sources.mail() {
            self.history.sample(Self.mailQueued, Double(mail.queued))
            self.history.sample(Self.mailOldestAge, mail.oldestAgeSeconds)
        }
    }

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await self.sampleOnce()
            // Half a second into the next bucket: one sample per bucket, whatever the sampling itself took.
            let wait = self.history.secondsUntilNextBucket() + 0.5
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
        }
    }
}
