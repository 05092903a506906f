public import Foundation
import GuestPassCrypto
import GuestPassPostgres

extension Administration {
    /// One API key as an operator sees it: never the key, only its id, kind, first characters and dates.
    public struct KeySummary: Sendable, Encodable {
        public let id: String
        public let kind: String
        public let prefix: String
        public let created_at: String
        public let revoked_at: String?
    }

    /// An app with its keys.
    public struct AppSummary: Sendable, Encodable {
        public let app_id: String
        public let name: String
        public let keys: [KeySummary]
    }

    /// Every app (by name) with every key it has had.
    public func listApps() async throws -> [AppSummary] {
        let rows = try await self.pool.execute(
            """
            SELECT a.id, a.name, k.id AS key_id, k.kind, k.key_prefix, k.created_at, k.revoked_at
            FROM guestpass.apps AS a LEFT JOIN guestpass.api_keys AS k ON k.app_id = a.id
            ORDER BY a.name, a.id, k.created_at, k.id
            """
        ).rows
        var apps: [AppSummary] = []
        for row in rows {
            let id = try row.decode(UUID.self, "id").uuidString.lowercased()
            var keys = apps.last?.app_id == id ? apps.removeLast().keys : []
            if let keyID = try row.decode(UUID?.self, "key_id") {
                keys.append(
                    KeySummary(
                        id: keyID.uuidString.lowercased(), kind: try row.decode(String.self, "kind"),
                        prefix: try row.decode(String.self, "key_prefix"),
                        created_at: RFC3339.format(try row.decode(Date.self, "created_at")),
                        revoked_at: try row.decode(Date?.self, "revoked_at").map(RFC3339.format)
                    ))
            }
            apps.append(AppSummary(app_id: id, name: try row.decode(String.self, "name"), keys: keys))
        }
        return apps
    }

    /// New publishable and secret keys for `app`; the old ones keep working until `revokeKey`. Nil without the app.
    public func rotateKeys(app: UUID) async throws -> (publishable: APIKey, secret: APIKey)? {
        let publishable = try APIKey.generate(kind: .publishable)
        let secret = try APIKey.generate(kind: .secret)
        let found: Bool = try await self.pool.withConnection { connection in
            try await connection.run { connection in
                try connection.transaction { connection in
                    guard try connection.execute("SELECT 1 FROM guestpass.apps WHERE id = $1 FOR UPDATE", [app]).rowCount == 1 else { return false }
                    try publishable.record(for: app, on: connection)
                    try secret.record(for: app, on: connection)
                    return true
                }
            }
        }
        return found ? (publishable, secret) : nil
    }

    /// Revokes `app`'s key `key` (the key itself, or its id from `listApps`); false when it has no such live key.
    /// Servers stop accepting it within their key cache's minute.
    public func revokeKey(app: UUID, key: String) async throws -> Bool {
        let byID = UUID(uuidString: key)
        let result = try await self.pool.execute(
            """
            UPDATE guestpass.api_keys SET revoked_at = now()
            WHERE app_id = $1 AND revoked_at IS NULL AND (id = $2 OR key_hash = $3)
            """,
            [app, byID, Digest.sha256Hex(key)]
        )
        return result.affectedRows == 1
    }
}
