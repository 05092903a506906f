import Foundation
import GuestPassPostgres
import Logging

/// Applies migrations in order, once, each in its own transaction together with its history row.
///
/// Runners serialise on a session-level PostgreSQL advisory lock, polled with `pg_try_advisory_lock` until a
/// deadline (a blocking wait could deadlock with a `CREATE INDEX CONCURRENTLY` in the other runner). Before applying
/// anything the runner refuses a history that does not match the files: an applied file that changed, a recorded
/// file that is missing, a failed non-transactional file, or a new file older than the newest applied one.
public struct MigrationRunner: Sendable {
    /// The advisory lock key ("GuestPas" in ASCII).
    static let lockKey: Int64 = 0x4775_6573_7450_6173

    public let pool: PostgresPool
    public let logger: Logger
    /// How long to wait for another runner to finish.
    public var lockTimeout: Duration = .seconds(120)

    public init(pool: PostgresPool, logger: Logger = Logger(label: "guestpass.migrate")) {
        self.pool = pool
        self.logger = logger
    }

    /// The result of `up`: the files that were applied now.
    public struct Outcome: Sendable {
        public let applied: [MigrationFile]
    }

    /// Applies every pending file of `core`, then of `app`, then (when any was applied) tells running servers to reload
    /// their schema cache with `NOTIFY pgrst, 'reload schema'`.
    public func up(core: [MigrationFile], app: [MigrationFile]?) async throws -> Outcome {
        let logger = self.logger
        let lockTimeout = self.lockTimeout
        return try await self.pool.withConnection { connection in
            try await connection.run { connection in
                try Self.withAdvisoryLock(connection, timeout: lockTimeout, logger: logger) {
                    try History.create(on: connection)
                    let history = try History.load(from: connection)
                    // Validate every scope before applying anything, so a bad app folder stops the run untouched.
                    let pending =
                        try Self.validate(files: core, scope: .core, against: history)
                        + (app.map { try Self.validate(files: $0, scope: .app, against: history) } ?? [])
                    for file in pending {
                        try Self.apply(file, on: connection, logger: logger)
                    }
                    // Running servers reload their schema cache (PostgREST's channel and payload).
                    if !pending.isEmpty { try connection.execute("NOTIFY pgrst, 'reload schema'") }
                    return Outcome(applied: pending)
                }
            }
        }
    }

    /// Lists every known migration with its state. Files of the `app` scope are checked only when `app` is given.
    public func status(core: [MigrationFile], app: [MigrationFile]?) async throws -> [MigrationStatus] {
        try await self.pool.withConnection { connection in
            try await connection.run { connection in
                let history = try History.exists(on: connection) ? try History.load(from: connection) : [:]
                var rows = MigrationStatus.compare(files: core, scope: .core, history: history)
                if let app {
                    rows += MigrationStatus.compare(files: app, scope: .app, history: history)
                } else {
                    rows += MigrationStatus.compare(files: nil, scope: .app, history: history)
                }
                return rows
            }
        }
    }

    // MARK: Steps

    /// The files not yet applied, after checking the history against the files.
    static func validate(
        files: [MigrationFile], scope: MigrationScope, against history: [History.Key: History.Entry]
    ) throws -> [MigrationFile] {
        let byVersion = Dictionary(uniqueKeysWithValues: files.map { ($0.version, $0) })
        var newestApplied = -1
        for (key, entry) in history where key.scope == scope.rawValue {
            guard let file = byVersion[key.version] else {
                throw MigrationError(
                    "\(scope.rawValue) migration \(key.version)_\(entry.name).sql was applied but its file is missing; restore it (migrations are forward-only)"
                )
            }
            guard entry.success else {
                throw MigrationError(
                    "\(scope.rawValue) migration \(file.version)_\(file.name).sql failed part-way (non-transactional); repair the database by hand, then delete its history row"
                )
            }
            guard entry.checksum == file.checksum else {
                throw MigrationError(
                    "\(scope.rawValue) migration \(file.version)_\(file.name).sql was edited after it was applied (checksum \(entry.checksum), file \(file.checksum)); write a new migration instead"
                )
            }
            newestApplied = max(newestApplied, file.order)
        }
        let pending = files.filter { history[History.Key(scope: scope.rawValue, version: $0.version)] == nil }
        if let early = pending.first(where: { $0.order < newestApplied }) {
            throw MigrationError(
                "\(scope.rawValue) migration \(early.version)_\(early.name).sql is older than the newest applied one; renumber it after the others"
            )
        }
        return pending
    }

    /// Applies one file. Transactional: `BEGIN`, its history row marked unfinished, the file, the row marked done,
    /// `COMMIT` — all or nothing. A deferred check on the history table refuses any commit while the row is still
    /// unfinished, so a file with its own `COMMIT` fails at that `COMMIT` and leaves no trace.
    /// Non-transactional: a `success = false` row first, the single statement alone, then the row flipped to true.
    static func apply(_ file: MigrationFile, on connection: PostgresConnection, logger: Logger) throws {
        let started = ContinuousClock.now
        try connection.execute("RESET ALL")
        if file.transactional {
            try connection.transaction { connection in
                try History.record(file, success: false, duration: .zero, on: connection)
                try Self.runBody(file, on: connection)
                guard connection.transactionStatus == .inTransaction else {
                    throw MigrationError("\(file.version)_\(file.name).sql ended the transaction itself; remove its BEGIN/COMMIT")
                }
                try History.markSucceeded(file, duration: ContinuousClock.now - started, on: connection)
            }
        } else {
            try History.record(file, success: false, duration: .zero, on: connection)
            try Self.runBody(file, on: connection)
            try History.markSucceeded(file, duration: ContinuousClock.now - started, on: connection)
        }
        try connection.execute("RESET ALL")
        logger.info(
            "applied migration",
            metadata: [
                "migration.scope": "\(file.scope.rawValue)", "migration.version": "\(file.version)",
                "migration.name": "\(file.name)", "migration.duration": "\(ContinuousClock.now - started)",
            ]
        )
    }

    private static func runBody(_ file: MigrationFile, on connection: PostgresConnection) throws {
        do {
            try connection.executeScript(file.sql)
        } catch let error as PostgresError {
            var message = "\(file.scope.rawValue) migration \(file.version)_\(file.name).sql failed"
            if let state = error.sqlState { message += " (SQLSTATE \(state))" }
            message += ": \(error.message)"
            if let detail = error.detail { message += "\n  detail: \(detail)" }
            if let hint = error.hint { message += "\n  hint: \(hint)" }
            throw MigrationError(message)
        }
    }

    /// Holds the runners' advisory lock around `body`, polling for it until `timeout`.
    static func withAdvisoryLock<R>(
        _ connection: PostgresConnection, timeout: Duration, logger: Logger, _ body: () throws -> R
    ) throws -> R {
        let deadline = ContinuousClock.now + timeout
        var announced = false
        while try !connection.execute("SELECT pg_try_advisory_lock($1)", [Self.lockKey]).rows[0].decode(Bool.self, at: 0) {
            guard ContinuousClock.now < deadline else {
                throw MigrationError("another migration runner held the lock for longer than \(timeout)")
            }
            if !announced {
                logger.info("waiting for another migration runner to finish")
                announced = true
            }
            usleep(UInt32.random(in: 50_000...150_000))
        }
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock($1)", [Self.lockKey]) }
        return try body()
    }
}
