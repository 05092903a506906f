public import Foundation
public import GuestPassJSON
public import GuestPassPostgres

/// What `guestpass_server.merge_guest` answered.
public enum MergeOutcome {
    case merged(guest: UUID, creditsMoved: Int, balance: Int, rows: JSONValue)
    case tokenNotFound
    case sameUser
    case notAGuest
}

extension ServerFunctions {
    /// An Apple refresh token of a deleted account, sealed, with what revoking it needs.
    public struct DeletedAppleToken: Sendable {
        public let subject: String
        public let clientID: String
        public let sealed: [UInt8]

        public init(subject: String, clientID: String, sealed: [UInt8]) {
            self.subject = subject
            self.clientID = clientID
            self.sealed = sealed
        }
    }

    /// `guestpass_server.delete_account`: deletes the caller; the Apple refresh tokens it held.
    public func deleteAccount(schemas: [String], as identity: RequestIdentity) async throws -> [DeletedAppleToken] {
        let statement = PostgresStatement(
            "SELECT apple_subject, apple_client_id, encode(apple_refresh_token, 'base64') AS sealed FROM guestpass_server.delete_account($1::text[])",
            [PostgresTextArray.literal(schemas)]
        )
        let rows = try await self.pool.requestTransaction(identity, [statement]).first?.rows ?? []
        return try rows.compactMap { row in
            guard let clientID = try row.decode(String?.self, "apple_client_id"),
                let sealed = Data(base64Encoded: try row.decode(String.self, "sealed"), options: .ignoreUnknownCharacters)
            else { return nil }
            return DeletedAppleToken(subject: try row.decode(String.self, "apple_subject"), clientID: clientID, sealed: Array(sealed))
        }
    }

    /// `guestpass_server.merge_guest`: merges the guest of refresh token `tokenHash` (session `session`) into the caller.
    public func mergeGuest(session: UUID, tokenHash: String, schemas: [String], as identity: RequestIdentity) async throws -> MergeOutcome {
        let statement = PostgresStatement(
            "SELECT * FROM guestpass_server.merge_guest($1, $2, $3::text[])", [session, tokenHash, PostgresTextArray.literal(schemas)]
        )
        guard let row = try await self.pool.requestTransaction(identity, [statement]).first?.first else {
            throw PostgresError(.protocolViolation, message: "merge_guest returned no row")
        }
        switch try row.decode(String.self, "status") {
        case "merged":
            return .merged(
                guest: try row.decode(UUID.self, "guest_id"), creditsMoved: try row.decode(Int.self, "credits_moved"),
                balance: try row.decode(Int.self, "credits_balance"),
                rows: try JSONValue.parse(try row.decode(PostgresJSON.self, "rows_moved").text)
            )
        case "refresh_token_not_found": return .tokenNotFound
        case "same_user": return .sameUser
        case "not_a_guest": return .notAGuest
        case let status: throw PostgresError(.protocolViolation, message: "merge_guest answered an unknown status \(status)")
        }
    }
}
