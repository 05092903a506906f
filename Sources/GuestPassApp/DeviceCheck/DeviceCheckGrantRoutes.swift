import Foundation
import GuestPassCrypto
import GuestPassDeviceCheck
import GuestPassPostgres
import HTTPTypes
import Hummingbird
import GuestPassJSON
import GuestPassStore

/// `POST /v1/devicecheck/grant` `{"device_token": "…"}`: the welcome credits, once per physical device.
///
/// Apple keeps two bits per device (per developer team); `bit0` means "welcome grant given". Apple has no
/// compare-and-set, so the claim is bookkept in PostgreSQL around the Apple calls:
/// 1. begin (one transaction): refuse a token seen before (by the SHA-256 of its bytes, so no spelling of it passes
///    twice), answer if the user already claimed, else record a pending claim (or take over an old pending one: the
///    repair path after a crash or an update whose fate is unknown);
/// 2. ask Apple for the bits, without any lock: `bit0` set → refused (a reinstall); for a repair, granted only with
///    proof the bit is the claim's own (`devicecheck_finish` decides);
/// 3. `bit0` unset → take the app's lease (`GrantLease`: one claim of the app at a time, on every replica), ask Apple
///    again under it, set `bit0` if still unset, and finish: grant, in the transaction that releases the lease. If the
///    update fails, ask once more: set → it landed, grant; unset → nothing was written, failed; no answer → the claim
///    stays pending and a retry after 30 s repairs it.
///
/// So two installs on one phone claiming at the same moment are serialised: the second one's query under the lease
/// sees the first one's bit. Every path ends the claim (granted, refused, failed) or leaves it pending for repair, and
/// the work runs in a task of its own, so a client that goes away cannot leave it half done. Apple unreachable → 503
/// `devicecheck_unavailable`; the lease not had within `GrantLease.wait` → 503 `devicecheck_busy`; nothing granted.
///
/// Limits: an app's new-device grants are serialised, so it gets about one per two Apple round trips (bench/devicecheck.sh
/// measured 3.8 per second with Apple answering in 150 ms; devices already granted are not serialised: 28 claims per
/// second from 8 clients). Apps of one Apple team that run their own grants are serialised per app, not per team.
struct DeviceCheckGrantRoutes: Sendable {
    let functions: ServerFunctions
    let authenticator: Authenticator
    let clients: DeviceCheckClients
    let lease: GrantLease
    /// Runs between Apple's update and the database commit; tests inject a crash here.
    let afterAppleUpdate: @Sendable () async throws -> Void

    struct Outcome: ResponseEncodable {
        let granted: Bool
        let reason: String?
        let credits_granted: Int
        let credits_balance: Int?
    }

    /// A claim begun in PostgreSQL: new, or the repair of one left pending.
    struct Claim {
        let id: UUID
        let repairing: Bool

        /// How to end it when Apple could not be asked or refused before any update: a new claim is closed; a repair
        /// (whose earlier update may have landed) is parked again.
        var nothingWritten: ClaimFinish { self.repairing ? .pending : .failed }
        /// How to end it when Apple says bit0 is set: a new claim is refused; a repair is granted only with proof.
        var bit0AlreadySet: ClaimFinish { self.repairing ? .foundSetOnRepair : .refused }
    }

    func register(on router: Router<AppRequestContext>) {
        router.group("v1").add(middleware: ErrorMiddleware(dialect: .goTrue))
            .add(middleware: AuthenticationMiddleware(authenticator: self.authenticator))
            .group(context: SignedInContext.self)
            .post("devicecheck/grant") { request, context in try await self.grant(request, context) }
    }

    func grant(_ request: Request, _ context: SignedInContext) async throws -> Outcome {
        var request = request
        let caller = context.caller
        let body = try await request.jsonObject(limit: BodyLimits.welcomeGrant)
        guard let text = body["device_token"]?.stringValue, !text.isEmpty else {
            throw APIError.validation("device_token must be the DeviceCheck token (base64) of this device")
        }
        guard let token = DeviceToken(text) else {
            throw APIError(.badRequest, code: GoTrueCode.invalidDeviceToken, message: "device_token is not a DeviceCheck token (standard base64)")
        }
        let outcome = try await Self.uncancellable { try await self.claim(caller, token) }
        ServiceMetrics.welcomeGrant(outcome.granted ? "granted" : outcome.reason ?? "not_granted")
        return outcome
    }

    /// Runs `body` in a task of its own, not a child of the caller's: cancelling the request (a client gone, a server
    /// shutting down) never stops a claim half way, between Apple's update and the commit.
    static func uncancellable<R: Sendable>(_ body: @escaping @Sendable () async throws -> R) async throws -> R {
        try await Task { try await body() }.value
    }

    private func claim(_ caller: Caller, _ token: DeviceToken) async throws -> Outcome {
        let (start, stored) = try await self.functions.devicecheckBegin(tokenHash: token.hashHex, as: caller.identity)
        let settings = stored.flatMap(DeviceCheckSettings.init)
        let claim: Claim
        switch start {
        case .alreadyClaimed:
            return Outcome(granted: false, reason: "already_claimed", credits_granted: 0, credits_balance: nil)
        case .tokenReused:
            throw APIError(.badRequest, code: GoTrueCode.deviceTokenReused, message: "This DeviceCheck token was used before; generate a new one")
        case .inProgress:
            throw APIError(
                .conflict, code: GoTrueCode.grantInProgress, message: "A grant for this user is in progress; retry shortly",
                headers: [.retryAfter: "2"])
        case .started(let id): claim = Claim(id: id, repairing: false)
        case .repair(let id): claim = Claim(id: id, repairing: true)
        }
        let nothingWritten = claim.nothingWritten

        let client: DeviceCheckClient
        do {
            guard let settings else {
                try await self.finish(caller, claim.id, nothingWritten)
                throw APIError(.serviceUnavailable, code: GoTrueCode.devicecheckNotConfigured, message: "DeviceCheck is not configured for this app")
            }
            client = try self.clients.client(for: settings)
        } catch let error as DeviceCheckError {
            try await self.finish(caller, claim.id, nothingWritten)
            throw error
        }

        // 1. Without the lease: most devices that already had their grant are answered here.
        let seen: DeviceBits
        do {
            seen = try await client.queryTwoBits(token.canonical)
        } catch let error as DeviceCheckError {
            try await self.finish(caller, claim.id, nothingWritten)
            throw error
        }
        if seen.bit0 {
            return try await self.finish(caller, claim.id, claim.bit0AlreadySet)
        }

        // 2. bit0 unset: ask again and set it under the app's lease, so two installs cannot both see it unset.
        let outcome = try await self.lease.withLease(caller.identity, app: caller.appID, claim: claim.id) {
            try await self.setBit0UnderLease(caller, claim, token, client)
        }
        guard let outcome else {
            try await self.finish(caller, claim.id, nothingWritten)
            throw APIError(
                .serviceUnavailable, code: GoTrueCode.devicecheckBusy, message: "Too many welcome grants at once; nothing was granted, retry shortly",
                headers: [.retryAfter: "2"]
            )
        }
        return outcome
    }

    /// Holding the lease: the second query, the update, and the finish that releases the lease.
    private func setBit0UnderLease(
        _ caller: Caller, _ ticket: Claim, _ token: DeviceToken, _ client: DeviceCheckClient
    ) async throws -> Outcome {
        let claim = ticket.id
        let bits: DeviceBits
        do {
            bits = try await client.queryTwoBits(token.canonical)
        } catch let error as DeviceCheckError {
            try await self.finish(caller, claim, ticket.nothingWritten)
            throw error
        }
        if bits.bit0 {
            return try await self.finish(caller, claim, ticket.bit0AlreadySet)
        }
        do {
            try await client.updateTwoBits(token.canonical, bit0: true, bit1: bits.bit1)
        } catch let error as DeviceCheckError {
            // Did it land? Nobody else can have written since: we hold the lease.
            guard let after = try? await client.queryTwoBits(token.canonical) else {
                try await self.finish(caller, claim, .pending)
                throw error
            }
            if after.bit0 { return try await self.finish(caller, claim, .granted) }
            try await self.finish(caller, claim, .failed)
            throw error
        }
        do {
            try await self.afterAppleUpdate()
        } catch {
            try await self.finish(caller, claim, .pending)
            throw error
        }
        return try await self.finish(caller, claim, .granted)
    }

    @discardableResult
    private func finish(_ caller: Caller, _ claim: UUID, _ outcome: ClaimFinish) async throws -> Outcome {
        let result = try await self.functions.devicecheckFinish(claim: claim, outcome: outcome, as: caller.identity)
        return Outcome(
            granted: result.granted, reason: result.granted ? nil : "device_already_claimed", credits_granted: result.creditsGranted,
            credits_balance: result.creditsBalance
        )
    }
}
