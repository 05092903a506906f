import Foundation
import GuestPassCrypto
import GuestPassDeviceCheck
import GuestPassPostgres
import HTTPTypes
import Hummingbird

/// `POST /v1/devicecheck/grant` `{"device_token": "…"}`: the welcome credits, once per physical device.
///
/// Apple keeps two bits per device (per developer team); `bit0` means "welcome grant given". The claim is
/// bookkept in PostgreSQL around the two Apple calls:
/// 1. begin (one transaction): refuse a token seen before, answer if the user already claimed, else record a
///    pending claim (or take over an old pending one: the repair path after a crash or an interrupted update);
/// 2. ask Apple for the bits; if `bit0` is unset, set it;
/// 3. finish (one transaction): grant the credits with their ledger row and mark the user, or record the refusal.
/// Apple unreachable before anything was set → the claim is closed as failed, 503, nothing granted; a failure
/// during or after the update leaves the claim pending, and a later retry repairs it (bit0 set + our pending
/// claim → grant). So a device gets the grant once, through reinstalls (new users, same bits), concurrent calls
/// (one pending claim per user) and crashes.
///
/// Limits: Apple does not tell us which device a token belongs to, so two different users claiming from one phone
/// at the very same moment (two installs at once) cannot be serialised here; and a repair that finds `bit0` set
/// cannot prove that our interrupted claim, not another install, set it.
struct DeviceCheckGrantRoutes: Sendable {
    let pool: PostgresPool
    let authenticator: Authenticator
    let clients: DeviceCheckClients
    /// Runs between Apple's update and the database commit; tests inject a crash here.
    let afterAppleUpdate: @Sendable () async throws -> Void

    struct Outcome: ResponseEncodable {
        let granted: Bool
        let reason: String?
        let credits_granted: Int
        let credits_balance: Int?
    }

    func register(on router: Router<AppRequestContext>) {
        router.post("v1/devicecheck/grant") { request, context in try await self.grant(request, context) }
    }

    func grant(_ request: Request, _ context: AppRequestContext) async throws -> Outcome {
        var request = request
        let (caller, _) = try await self.authenticator.authenticateUser(request)
        let body = try await request.jsonObject()
        guard let deviceToken = body["device_token"]?.stringValue, !deviceToken.isEmpty, deviceToken.utf8.count <= 4096 else {
            throw APIError.validation("device_token must be the DeviceCheck token (base64) of this device")
        }
        let begun = try await self.pool.requestTransaction(
            caller.identity,
            [
                PostgresStatement("SELECT * FROM guestpass_server.devicecheck_begin($1)", [Digest.sha256Hex(deviceToken)]),
                PostgresStatement("SELECT * FROM guestpass_server.app_devicecheck_settings()"),
            ]
        )
        guard let row = begun.first?.first else { throw APIError(.internalServerError, code: "unexpected_failure", message: "Unexpected failure") }
        let claim: UUID
        let repairing: Bool
        switch try row.decode(String.self, "status") {
        case "already_claimed":
            return Outcome(granted: false, reason: "already_claimed", credits_granted: 0, credits_balance: nil)
        case "token_reused":
            throw APIError(.badRequest, code: "device_token_reused", message: "This DeviceCheck token was used before; generate a new one")
        case "in_progress":
            throw APIError(.conflict, code: "grant_in_progress", message: "A grant for this user is in progress; retry shortly", headers: [.retryAfter: "2"])
        case "repair":
            claim = try row.decode(UUID.self, "pending_claim_id")
            repairing = true
        default:
            claim = try row.decode(UUID.self, "claim_id")
            repairing = false
        }

        let client: DeviceCheckClient
        do {
            guard let settingsRow = begun.last?.first, let settings = try DeviceCheckSettings(row: settingsRow) else {
                if !repairing { try await self.finish(caller, claim, "failed") }
                throw APIError(.serviceUnavailable, code: "devicecheck_not_configured", message: "DeviceCheck is not configured for this app")
            }
            client = try self.clients.client(for: settings)
        } catch let error as DeviceCheckError {
            if !repairing { try await self.finish(caller, claim, "failed") }
            context.logger.error("DeviceCheck key unusable", metadata: ["devicecheck.error": "\(error)"])
            throw Self.unavailable
        }

        let bits: DeviceBits
        do {
            bits = try await client.queryTwoBits(deviceToken)
        } catch let error as DeviceCheckError {
            // Nothing was set at Apple: close a new claim so a retry starts clean.
            if !repairing { try await self.finish(caller, claim, "failed") }
            throw self.translate(error, context)
        }
        let outcome: String
        if bits.bit0 {
            // Set before: by another install of this device (refuse), or by our own interrupted claim (repair).
            outcome = repairing ? "granted" : "refused"
        } else {
            do {
                try await client.updateTwoBits(deviceToken, bit0: true, bit1: bits.bit1)
            } catch let error as DeviceCheckError {
                // Apple may or may not have stored the bit: the claim stays pending, a later retry repairs it.
                throw self.translate(error, context)
            }
            try await self.afterAppleUpdate()
            outcome = "granted"
        }
        let finished = try await self.finish(caller, claim, outcome)
        return Outcome(
            granted: finished.granted, reason: finished.granted ? nil : "device_already_claimed",
            credits_granted: finished.credits, credits_balance: finished.balance
        )
    }

    @discardableResult
    private func finish(_ caller: Caller, _ claim: UUID, _ outcome: String) async throws -> (granted: Bool, credits: Int, balance: Int?) {
        let results = try await self.pool.requestTransaction(
            caller.identity, [PostgresStatement("SELECT * FROM guestpass_server.devicecheck_finish($1, $2)", [claim, outcome])]
        )
        guard let row = results.first?.first else { return (false, 0, nil) }
        return (try row.decode(Bool.self, "granted"), try row.decode(Int?.self, "credits_granted") ?? 0, try row.decode(Int?.self, "credits_balance"))
    }

    static let unavailable = APIError(
        .serviceUnavailable, code: "devicecheck_unavailable", message: "Apple DeviceCheck is unavailable; nothing was granted, retry later",
        headers: [.retryAfter: "5"]
    )

    private func translate(_ error: DeviceCheckError, _ context: AppRequestContext) -> APIError {
        if error.kind == .badDeviceToken {
            return APIError(.badRequest, code: "invalid_device_token", message: "Apple rejected the DeviceCheck token")
        }
        context.logger.error("DeviceCheck call failed", metadata: ["devicecheck.error": "\(error)"])
        return Self.unavailable
    }
}
