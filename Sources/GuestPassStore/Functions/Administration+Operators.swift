public import Foundation
import GuestPassPostgres

extension Administration {
    /// A console operator (`guestpass operators create`): its id.
    public func createOperator(
        email: String, passwordHash: String, totpSecret: [UInt8]?, totpRequired: Bool, allApps: Bool, apps: [UUID]
    ) async throws -> UUID {
        let apps = PostgresTextArray.literal(apps.map { $0.uuidString.lowercased() })
        return try await self.pool.execute(
            "SELECT guestpass.create_operator($1, $2, $3, $4, $5, $6::uuid[])", [email, passwordHash, totpSecret, totpRequired, allApps, apps]
        ).rows[0].decode(UUID.self, at: 0)
    }

    /// One console operator, as `guestpass operators list` prints it.
    public struct OperatorSummary: Sendable, Codable {
        public let id: UUID
        public let email: String
        public let secondFactor: Bool
        public let allApps: Bool
        public let apps: [String]
        public let disabled: Bool

        enum CodingKeys: String, CodingKey {
            case id, email
            case secondFactor = "second_factor"
            case allApps = "all_apps"
            case apps, disabled
        }
    }

    /// Every console operator, by email.
    public func listOperators() async throws -> [OperatorSummary] {
        try await self.pool.execute(
            """
            SELECT o.id, o.email, o.totp_secret IS NOT NULL, o.all_apps,
                   coalesce((SELECT string_agg(a.app_id::text, ',' ORDER BY a.app_id) FROM guestpass.operator_apps AS a
                             WHERE a.operator_id = o.id), ''),
                   o.disabled_at IS NOT NULL
            FROM guestpass.operators AS o ORDER BY o.email
            """
        ).rows.map { row in
            OperatorSummary(
                id: try row.decode(UUID.self, at: 0), email: try row.decode(String.self, at: 1), secondFactor: try row.decode(Bool.self, at: 2),
                allApps: try row.decode(Bool.self, at: 3), apps: try row.decode(String.self, at: 4).split(separator: ",").map(String.init),
                disabled: try row.decode(Bool.self, at: 5))
        }
    }
}
