import Foundation
public import GuestPassPostgres
public import Logging

/// Applies versioned migrations in order, once, and repeatable files whenever they change, each file in its own
/// transaction together with its history row.
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

    /// The result of `up`: the files that were applied now (versioned and repeatable, in the order they ran).
    public struct Outcome: Sendable {
        public let applied: [MigrationFile]

        /// The versioned files among `applied`.
        public var versioned: [MigrationFile] { self.applied.filter { $0.kind == .versioned } }
        /// The repeatable files among `applied`.
        public var repeatable: [MigrationFile] { self.applied.filter { $0.kind == .repeatable } }
    }

    /// Applies every pending versioned file of `core` only, then of `app` (no repeatable files): see
    /// `up(core: MigrationSet, app: MigrationSet?)`.
    public func up(core: [MigrationFile], app: [MigrationFile]?) async throws -> Outcome {
        try await self.up(core: MigrationSet(versioned: core), app: app.map { MigrationSet(versioned: $0) })
    }

    /// Applies the core set, then the app's: in each, every pending versioned file in version order, then every
    /// repeatable file whose checksum differs from the one recorded (or that was never applied), in file-name order;
    /// each file in its own transaction. So an app's files run against the finished core (its functions included).
    /// Everything is checked before anything is applied. When anything was applied, running servers are told to reload
    /// their schema cache with `NOTIFY pgrst, 'reload schema'`. Last, Realtime's capture triggers are made to match the
    /// `supabase_realtime` publication (`syncRealtime`).
    public func up(core: MigrationSet, app: MigrationSet?) async throws -> Outcome {
        let logger = self.logger
        let lockTimeout = self.lockTimeout
        return try await self.pool.withConnection { connection in
            try await connection.run { connection in
                try Self.withAdvisoryLock(connection, timeout: lockTimeout, logger: logger) {
                    try History.create(on: connection)
                    let history = try History.load(from: connection)
                    let repeatables = try History.loadRepeatables(from: connection)
                    // Validate every scope before applying anything, so a bad app folder stops the run untouched.
                    var plan: [(MigrationScope, MigrationSet)] = [(.core, core)]
                    if let app { plan.append((.app, app)) }
                    var pending: [MigrationFile] = []
                    var removed: [(MigrationScope, String)] = []
                    for (scope, set) in plan {
                        pending += try Self.validate(files: set.versioned, scope: scope, against: history)
                        let (changed, gone) = Self.changedRepeatables(set.repeatable, scope: scope, against: repeatables)
                        pending += changed
                        removed += gone.map { (scope, $0) }
                    }
                    for (scope, name) in removed {
                        try History.forgetRepeatable(scope: scope, name: name, on: connection)
                        logger.warning(
                            "repeatable file is gone; its objects stay until a versioned migration drops them",
                            metadata: ["migration.scope": "\(scope.rawValue)", "migration.name": "\(name)"]
                        )
                    }
                    for file in pending {
                        try Self.apply(file, on: connection, logger: logger)
                    }
                    // Running servers reload their schema cache (PostgREST's channel and payload).
                    if !pending.isEmpty { try connection.execute("NOTIFY pgrst, 'reload schema'") }
                    Self.syncRealtime(on: connection, logger: logger)
                    return Outcome(applied: pending)
                }
            }
        }
    }

    /// Lists every known versioned file of the core set, then every versioned file of `app`, with its state.
    public func status(core: [MigrationFile], app: [MigrationFile]?) async throws -> [MigrationStatus] {
        try await self.status(core: MigrationSet(versioned: core), app: app.map { MigrationSet(versioned: $0) })
    }

    /// Lists every known file with its state: per scope (core, then app), the versioned files in version order, then
    /// the repeatable ones in file-name order. Files of the `app` scope are checked only when `app` is given.
    public func status(core: MigrationSet, app: MigrationSet?) async throws -> [MigrationStatus] {
        try await self.pool.withConnection { connection in
            try await connection.run { connection in
                let history = try History.exists(on: connection) ? try History.load(from: connection) : [:]
                let repeatables = try History.repeatablesExist(on: connection) ? try History.loadRepeatables(from: connection) : [:]
                return MigrationStatus.compare(files: core.versioned, scope: .core, history: history)
                    + MigrationStatus.compareRepeatable(files: core.repeatable, scope: .core, recorded: repeatables)
                    + MigrationStatus.compare(files: app?.versioned, scope: .app, history: history)
                    + MigrationStatus.compareRepeatable(files: app?.repeatable, scope: .app, recorded: repeatables)
            }
        }
    }

    // MARK: Steps

    /// The files not yet applied, after checking the history against the files.
    static func validate(
        files: [MigrationFile], scope: MigrationScope, against history: [History.Key: History.Entry]
    ) throws -> [MigrationFile] {
        if scope == .core, let first = history[History.Key(scope: "core", version: "0001")], first.name == "create_roles" {
            throw MigrationError(Self.preBaselineMessage)
        }
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

    /// What `up` says to a database built by the core migrations of before the re-baseline (0001_create_roles.sql to
    /// 0045_table_api_refusals.sql), which no longer ship.
    static let preBaselineMessage = """
        this database was built by the core migrations from before their re-baseline (its history starts with \
        0001_create_roles.sql; the core migrations are now versioned area files plus repeatable definitions). Nothing \
        was deployed from that history, so it cannot be upgraded: recreate the database. A development stack: \
        `guestpass dev down --database NAME`, then `guestpass dev up …` (scripts/serve does it); any other database: \
        drop it, create it empty, and run `guestpass migrate up` (README, "Migrations: versioned and repeatable")
        """

    /// The repeatable files to apply (never applied, changed, or left unfinished) and the recorded names with no file.
    static func changedRepeatables(
        _ files: [MigrationFile], scope: MigrationScope, against recorded: [History.Key: History.Entry]
    ) -> (changed: [MigrationFile], removed: [String]) {
        let changed = files.filter { file in
            guard let entry = recorded[History.Key(scope: scope.rawValue, version: file.name)] else { return true }
            return !entry.success || entry.checksum != file.checksum
        }
        let names = Set(files.map(\.name))
        let removed = recorded.keys.filter { $0.scope == scope.rawValue && !names.contains($0.version) }.map(\.version).sorted()
        return (changed, removed)
    }

    /// Applies one file. Repeatable: `BEGIN`, its row recorded as unfinished with the new checksum, the file, the row
    /// marked done, `COMMIT`; a failure rolls all of it back (the old checksum stays recorded). Transactional: `BEGIN`, its history row marked unfinished, the file, the row marked done,
    /// `COMMIT` — all or nothing. A deferred check on the history table refuses any commit while the row is still
    /// unfinished, so a file with its own `COMMIT` fails at that `COMMIT` and leaves no trace.
    /// Non-transactional: a `success = false` row first, the single statement alone, then the row flipped to true.
    static func apply(_ file: MigrationFile, on connection: PostgresConnection, logger: Logger) throws {
        let started = ContinuousClock.now
        try connection.execute("RESET ALL")
        if file.kind == .repeatable {
            try connection.transaction { connection in
                try History.recordRepeatable(file, on: connection)
                try Self.runBody(file, on: connection)
                guard connection.transactionStatus == .inTransaction else {
                    throw MigrationError("\(file.scope.rawValue) \(file.fileName) ended the transaction itself; remove its BEGIN/COMMIT")
                }
                try History.markRepeatableSucceeded(file, duration: ContinuousClock.now - started, on: connection)
            }
        } else if file.transactional {
            try connection.transaction { connection in
                try History.record(file, success: false, duration: .zero, on: connection)
                try Self.runBody(file, on: connection)
                guard connection.transactionStatus == .inTransaction else {
                    throw MigrationError("\(file.fileName) ended the transaction itself; remove its BEGIN/COMMIT")
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
                "migration.scope": "\(file.scope.rawValue)", "migration.kind": "\(file.kind.rawValue)", "migration.version": "\(file.version)",
                "migration.name": "\(file.name)", "migration.duration": "\(ContinuousClock.now - started)",
            ]
        )
    }

    private static func runBody(_ file: MigrationFile, on connection: PostgresConnection) throws {
        do {
            try connection.executeScript(file.sql)
        } catch let error as PostgresError {
            var message = "\(file.scope.rawValue) migration \(file.fileName) failed"
            if let state = error.sqlState { message += " (SQLSTATE \(state))" }
            message += ": \(error.message)"
            if let detail = error.detail { message += "\n  detail: \(detail)" }
            if let hint = error.hint { message += "\n  hint: \(hint)" }
            throw MigrationError(message)
        }
    }

    /// Realtime capture follows the publication: once the files have run (an app's migration may have added a table
    /// to `supabase_realtime`), `guestpass_server.realtime_sync()` puts the capture triggers on exactly the published
    /// tables (sql/migrations/repeatable/13_realtime.sql). It runs after every `up`, whatever was applied, so the
    /// triggers match the publication when migrate returns; it changes nothing when they already do. Skipped when the
    /// core that defines it is not there (a database with only an app's files). A failure is logged, not thrown: the
    /// files are applied and committed, and the servers run the same sync at start and every 60 s.
    static func syncRealtime(on connection: PostgresConnection, logger: Logger) {
        do {
            let defined = try connection.execute("SELECT to_regprocedure('guestpass_server.realtime_sync()') IS NOT NULL")
            guard try defined.rows[0].decode(Bool.self, at: 0) else { return }
            let captured = try connection.execute("SELECT schema_name, table_name FROM guestpass_server.realtime_sync()")
            let tables = try captured.rows.map { "\(try $0.decode(String.self, at: 0)).\(try $0.decode(String.self, at: 1))" }
            logger.info("realtime capture synchronised", metadata: ["realtime.tables": "\(tables.joined(separator: ","))"])
        } catch {
            logger.warning(
                "realtime_sync failed after the migrations; the servers retry it every 60 s",
                metadata: ["error": "\(error)"]
            )
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
