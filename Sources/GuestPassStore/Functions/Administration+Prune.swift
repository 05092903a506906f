import Foundation
import GuestPassPostgres

extension Administration {
    /// What `guestpass.prune_batch` removes, in the order `prune` runs them (guests first: their sessions go with them).
    public static let pruneKinds = [
        "guests", "sessions", "refresh_tokens", "idempotency_records", "rate_limits", "account_codes", "email_codes", "auth_codes",
        "mail_outbox",
    ]

    /// One batch of `kind` (`guestpass.prune_batch`, its own short transaction): how many rows it removed (or would),
    /// and where the next batch starts (nil: this kind is done).
    public func pruneBatch(
        _ kind: String, limit: Int, dryRun: Bool, schemas: [String], after: PruneCursor
    ) async throws -> (removed: Int, next: PruneCursor?) {
        let row = try await self.pool.execute(
            "SELECT removed, more, next_after FROM guestpass.prune_batch($1, $2, $3, $4::text[], $5)",
            [kind, Int32(limit), dryRun, PostgresTextArray.literal(schemas), after.id]
        ).rows[0]
        let more = try row.decode(Bool.self, at: 1)
        return (try row.decode(Int.self, at: 0), more ? PruneCursor(id: try row.decode(UUID?.self, at: 2)) : nil)
    }

    /// Where a kind's next batch starts (guests: after this id; other kinds: from the start).
    public struct PruneCursor: Sendable {
        let id: UUID?
        public static let start = PruneCursor(id: nil)
    }
}
