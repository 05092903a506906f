public import Foundation
public import GuestPassJSON
public import GuestPassPostgres

/// The kinds of account code (`guestpass.account_codes.kind`): known to the database only by the SHA-256 of their
/// normalised text; GuestPassApp's `AccountCode` makes and normalises them.
public enum AccountCodeKind: String, Sendable {
    /// One-time, minutes long: moving to a new phone.
    case transfer
    /// One-time, no expiry: written down for a lost phone.
    case recovery
}

/// What `guestpass_server.redeem_account_code` answered.
public enum RedeemOutcome {
    case redeemed(PostgresRow, kind: AccountCodeKind)
    case invalidCode
    case deviceInUse
}

extension ServerFunctions {
    /// `guestpass_server.create_account_code`: stores `codeHash` for the caller; the expiry (nil for recovery).
    public func createAccountCode(_ kind: AccountCodeKind, codeHash: String, lifetime: Int, as identity: RequestIdentity) async throws -> Date? {
        let results = try await self.pool.requestTransaction(
            identity,
            [PostgresStatement("SELECT guestpass_server.create_account_code($1, $2, $3) AS expires_at", [kind.rawValue, codeHash, Int32(lifetime)])]
        )
        return try results.first?.first?.decode(Date?.self, "expires_at")
    }

    /// `guestpass_server.redeem_account_code`: a new device (`deviceSecretHash`, the facts `device`) and session for the
    /// account of the code.
    public func redeemAccountCode(
        _ kind: AccountCodeKind, codeHash: String, device: [String: JSONValue]?, deviceSecretHash: String, userAgent: String?,
        sessionID: UUID, refreshTokenHash: String, as identity: RequestIdentity
    ) async throws -> RedeemOutcome {
        let statement = PostgresStatement(
            "SELECT * FROM guestpass_server.redeem_account_code($1, $2, $3, $4::jsonb, $5, $6, $7, $8)",
            [
                kind.rawValue, codeHash, deviceSecretHash, device.map { PostgresJSON(text: JSONValue.object($0).jsonText) },
                identity.clientAddress, userAgent.map { String($0.prefix(512)) }, sessionID, refreshTokenHash,
            ]
        )
        guard let row = try await self.pool.requestTransaction(identity, [statement]).first?.first else {
            throw PostgresError(.protocolViolation, message: "redeem_account_code returned no row")
        }
        switch try row.decode(String.self, "status") {
        case "redeemed_transfer": return .redeemed(row, kind: .transfer)
        case "redeemed_recovery": return .redeemed(row, kind: .recovery)
        case "invalid_code": return .invalidCode
        case "device_in_use": return .deviceInUse
        case let status: throw PostgresError(.protocolViolation, message: "redeem_account_code answered an unknown status \(status)")
        }
    }
}
