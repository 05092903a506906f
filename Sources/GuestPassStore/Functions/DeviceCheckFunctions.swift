public import Foundation
public import GuestPassPostgres

/// What `guestpass_server.devicecheck_begin` answered.
public enum ClaimStart: Sendable {
    case alreadyClaimed
    case tokenReused
    case inProgress
    case started(UUID)
    case repair(UUID)
}

/// The outcomes `guestpass_server.devicecheck_finish` takes.
public enum ClaimFinish: String, Sendable {
    /// bit0 was unset and this claim set it.
    case granted
    /// bit0 was already set by another install.
    case refused
    /// Apple could not be asked, and this claim certainly did not write bit0.
    case failed
    /// A repair found bit0 set: SQL grants only with proof it is this claim's own.
    case foundSetOnRepair = "found_set_on_repair"
    /// The update's fate is unknown: keep the claim pending for a repair; release the lease.
    case pending
}

/// What `guestpass_server.devicecheck_finish` answered.
public struct ClaimResult: Sendable {
    public let granted: Bool
    public let creditsGranted: Int
    public let creditsBalance: Int?
}

/// An app's DeviceCheck key settings, as `guestpass_server.app_devicecheck_settings()` returns them: nil when the app
/// has no key configured. The server to call is `baseURL` when set, else the one of `environment` (GuestPassApp
/// resolves it with GuestPassDeviceCheck, which the store does not import).
public struct DeviceCheckKeySettings: Hashable, Sendable {
    public let teamID: String
    public let keyID: String
    public let keyPath: String
    public let baseURL: String?
    /// `production` (the default) or `development`.
    public let environment: String

    init?(row: PostgresRow) throws {
        guard let team = try row.decode(String?.self, "team_id"), let key = try row.decode(String?.self, "key_id"),
            let path = try row.decode(String?.self, "key_path")
        else { return nil }
        self.teamID = team
        self.keyID = key
        self.keyPath = path
        self.baseURL = try row.decode(String?.self, "base_url")
        self.environment = try row.decode(String?.self, "environment") ?? "production"
    }
}

extension ServerFunctions {
    /// `guestpass_server.devicecheck_begin` and `app_devicecheck_settings`, in one transaction: how the claim starts,
    /// and the app's DeviceCheck settings (nil when it has none).
    public func devicecheckBegin(tokenHash: String, as identity: RequestIdentity) async throws -> (ClaimStart, DeviceCheckKeySettings?) {
        let results = try await self.pool.requestTransaction(
            identity,
            [
                PostgresStatement("SELECT * FROM guestpass_server.devicecheck_begin($1)", [tokenHash]),
                PostgresStatement("SELECT * FROM guestpass_server.app_devicecheck_settings()"),
            ]
        )
        guard let row = results.first?.first else { throw PostgresError(.protocolViolation, message: "devicecheck_begin returned no row") }
        let start: ClaimStart
        switch try row.decode(String.self, "status") {
        case "already_claimed": start = .alreadyClaimed
        case "token_reused": start = .tokenReused
        case "in_progress": start = .inProgress
        case "started": start = .started(try row.decode(UUID.self, "claim_id"))
        case "repair": start = .repair(try row.decode(UUID.self, "pending_claim_id"))
        case let status: throw PostgresError(.protocolViolation, message: "devicecheck_begin answered an unknown status \(status)")
        }
        return (start, try results.last?.first.flatMap(DeviceCheckKeySettings.init(row:)))
    }

    /// `guestpass_server.devicecheck_take_lease`: whether `claim` now holds its app's lease for `timeToLive`.
    public func devicecheckTakeLease(claim: UUID, timeToLive: Duration, as identity: RequestIdentity) async throws -> Bool {
        let results = try await self.pool.requestTransaction(
            identity,
            [PostgresStatement("SELECT guestpass_server.devicecheck_take_lease($1, $2)", [claim, Double(timeToLive.components.seconds)])]
        )
        return try results.first?.first?.decode(Bool.self, at: 0) ?? false
    }

    /// `guestpass_server.devicecheck_finish`: ends (or parks) `claim` with `outcome` and releases its lease.
    public func devicecheckFinish(claim: UUID, outcome: ClaimFinish, as identity: RequestIdentity) async throws -> ClaimResult {
        let results = try await self.pool.requestTransaction(
            identity, [PostgresStatement("SELECT * FROM guestpass_server.devicecheck_finish($1, $2)", [claim, outcome.rawValue])]
        )
        guard let row = results.first?.first else { throw PostgresError(.protocolViolation, message: "devicecheck_finish returned no row") }
        return ClaimResult(
            granted: try row.decode(Bool.self, "granted"), creditsGranted: try row.decode(Int?.self, "credits_granted") ?? 0,
            creditsBalance: try row.decode(Int?.self, "credits_balance")
        )
    }
}
