public import Foundation
public import GuestPassPostgres

/// One row of the change log (`guestpass.realtime_changes`): a captured row change, a broadcast or a presence diff.
public struct CapturedChange: Sendable {
    /// What the row records.
    public enum Kind: String, Sendable {
        case insert = "INSERT"
        case update = "UPDATE"
        case delete = "DELETE"
        case broadcast = "BROADCAST"
        case presence = "PRESENCE"
    }

    public let seq: Int64
    public let kind: Kind
    /// The table of a row change.
    public let schema: String?
    public let table: String?
    /// The row's `app_id` (row changes of tables that have one), or the sender's app (broadcast, presence).
    public let appID: UUID?
    /// The channel topic of a broadcast or presence diff.
    public let topic: String?
    /// The user event of a broadcast.
    public let event: String?
    /// The new row (INSERT, UPDATE), the broadcast payload or the presence diff, as JSON text.
    public let record: String?
    /// The whole old row (UPDATE, DELETE), as JSON text.
    public let oldRecord: String?
    /// The server process that wrote a broadcast or presence row.
    public let origin: UUID?
    /// When the change was captured: UTC, milliseconds, `Z` (Realtime's `commit_timestamp` format).
    public let commitTimestamp: String
}

/// One poll of the change log: the rows committed since the previous poll's snapshot, in `seq` order, and the
/// snapshot to pass next time.
public struct RealtimePoll: Sendable {
    public let snapshot: String
    public let changes: [CapturedChange]
}

/// The server's calls on the Realtime change log, presence table and capture triggers (`guestpass_server.realtime_*`,
/// `sql/migrations/repeatable/13_realtime.sql`). They run as the login role, outside request transactions, always on
/// the primary: the log is an unlogged table, which a standby cannot read.
public struct RealtimeFeed: Sendable {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// The changes committed after `previous` (a snapshot a poll returned; nil: none, just a starting snapshot). Every
    /// committed transaction's rows come back in exactly one poll, an aborted one's never, and a long transaction
    /// holds back only its own rows (the snapshot cursor: see `realtime_poll`).
    public func poll(after previous: String?) async throws -> RealtimePoll {
        let result = try await self.pool.execute(
            """
            SELECT snapshot, seq, kind, schema_name, table_name, app_id, topic, event, record, old_record, origin, commit_timestamp
            FROM guestpass_server.realtime_poll($1::pg_snapshot)
            """,
            [previous]
        )
        var snapshot = previous ?? ""
        var changes: [CapturedChange] = []
        changes.reserveCapacity(result.rowCount)
        for row in result.rows {
            snapshot = try row.decode(String.self, at: 0)
            guard let seq = try row.decode(Int64?.self, at: 1), let kind = CapturedChange.Kind(rawValue: try row.decode(String.self, at: 2)) else {
                continue
            }
            changes.append(
                CapturedChange(
                    seq: seq, kind: kind, schema: try row.decode(String?.self, at: 3), table: try row.decode(String?.self, at: 4),
                    appID: try row.decode(UUID?.self, at: 5), topic: try row.decode(String?.self, at: 6), event: try row.decode(String?.self, at: 7),
                    record: try row.decode(String?.self, at: 8), oldRecord: try row.decode(String?.self, at: 9),
                    origin: try row.decode(UUID?.self, at: 10), commitTimestamp: try row.decode(String?.self, at: 11) ?? ""
                ))
        }
        return RealtimePoll(snapshot: snapshot, changes: changes)
    }

    /// Installs the capture triggers on every table of the `supabase_realtime` publication and removes them from tables
    /// that left it; returns the captured tables as `schema.table`.
    @discardableResult
    public func sync() async throws -> [String] {
        let result = try await self.pool.execute("SELECT schema_name, table_name FROM guestpass_server.realtime_sync()")
        return try result.rows.map { try $0.decode(String.self, at: 0) + "." + $0.decode(String.self, at: 1) }
    }

    /// Appends a broadcast for every replica's sockets on `topic` of `app`.
    public func broadcast(app: UUID, topic: String, event: String, payload: String, origin: UUID) async throws {
        try await self.pool.execute(
            "SELECT guestpass_server.realtime_broadcast($1, $2, $3, $4::jsonb, $5)", [app, topic, event, payload, origin]
        )
    }

    /// Removes log rows older than `retentionSeconds` that no poll can still need; returns how many.
    @discardableResult
    public func prune(retentionSeconds: Int) async throws -> Int {
        let result = try await self.pool.execute(
            "SELECT guestpass_server.realtime_prune(make_interval(secs => $1))", [Double(retentionSeconds)]
        )
        return try result.first?.decode(Int?.self, at: 0) ?? 0
    }

    /// Of `sessions`, the ones still live: not signed out, not expired, their device not revoked.
    public func liveSessions(_ sessions: [UUID]) async throws -> Set<UUID> {
        guard !sessions.isEmpty else { return [] }
        let result = try await self.pool.execute(
            "SELECT session_id FROM guestpass_server.realtime_live_sessions($1::uuid[])",
            [PostgresTextArray.literal(sessions.map { $0.uuidString.lowercased() })]
        )
        return Set(try result.rows.map { try $0.decode(UUID.self, at: 0) })
    }
}

// MARK: Presence

extension RealtimeFeed {
    /// Records one presence meta of a channel (`phx_ref` names it) under this replica's lease, and logs the join diff.
    public func presenceTrack(
        app: UUID, topic: String, key: String, replica: UUID, ref: String, meta: String, leaseSeconds: Int
    ) async throws {
        try await self.pool.execute(
            "SELECT guestpass_server.realtime_presence_track($1, $2, $3, $4, $5, $6::jsonb, make_interval(secs => $7))",
            [app, topic, key, replica, ref, meta, Double(leaseSeconds)]
        )
    }

    /// Removes one presence meta and logs the leave diff (nothing when it was already gone).
    public func presenceUntrack(app: UUID, topic: String, key: String, replica: UUID, ref: String) async throws {
        try await self.pool.execute(
            "SELECT guestpass_server.realtime_presence_untrack($1, $2, $3, $4, $5)", [app, topic, key, replica, ref]
        )
    }

    /// The topic's presence state in Phoenix's shape, `{"key":{"metas":[{"phx_ref":…,…}]}}`, as JSON text.
    public func presenceState(app: UUID, topic: String) async throws -> [(key: String, ref: String, meta: String)] {
        let result = try await self.pool.execute(
            "SELECT presence_key, phx_ref, meta FROM guestpass_server.realtime_presence_state($1, $2)", [app, topic]
        )
        return try result.rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1), try $0.decode(String.self, at: 2)) }
    }

    /// Extends the leases of every meta this replica tracks; then removes (and logs the leaves of) metas whose
    /// replica stopped renewing.
    public func presenceRenew(replica: UUID, leaseSeconds: Int) async throws {
        try await self.pool.execute(
            "SELECT guestpass_server.realtime_presence_renew($1, make_interval(secs => $2))", [replica, Double(leaseSeconds)]
        )
        try await self.pool.execute("SELECT guestpass_server.realtime_presence_expire()")
    }
}
