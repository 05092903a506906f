import Foundation
@testable import GuestPassApp
import GuestPassCrypto
import GuestPassDeviceCheckStandIn
import GuestPassPostgres
import GuestPassTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOConcurrencyHelpers
import Testing
import GuestPassJSON
@testable import GuestPassStore

/// The welcome grant against the DeviceCheck stand-in (a real HTTP server speaking Apple's protocol).
@Suite struct DeviceCheckGrantTests {
    /// Starts the stand-in, points the tenant's settings at it, then runs `body` with the GuestPass server.
    static func withGrantSetup(
        crashAfterAppleUpdate: NIOLockedValueBox<Int> = NIOLockedValueBox(0), appleLatency: Duration = .zero,
        _ body: @Sendable (TestService, TestTenant, StandInState, any TestClientProtocol) async throws -> Void
    ) async throws {
        let appleKey = try ES256PrivateKey.generate()
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("dc-\(UUID()).p8").path
        try appleKey.pkcs8PEMRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        try await TestService.with(examples: true, { $0.signupBurstPerIP = 1000 }) { configured in
            let service = {
                var service = configured
                service.configuration.afterAppleUpdate = {
                    let crash = crashAfterAppleUpdate.withLockedValue { remaining in
                        defer { remaining = max(0, remaining - 1) }
                        return remaining > 0
                    }
                    if crash { throw CancellationError() }
                }
                return service
            }()
            let tenant = try await service.createTenant()
            let state = StandInState()
            var logger = Logger(label: "standin")
            logger.logLevel = .warning
            var standInConfiguration = StandInConfiguration(teamID: "TEAM123456", keyID: "KEY1234567", publicKey: appleKey.publicKey)
            standInConfiguration.latency = appleLatency
            let standIn = buildDeviceCheckStandIn(configuration: standInConfiguration, state: state, logger: logger)
            try await standIn.test(.live) { standInClient in
                let port = try #require(standInClient.port)
                var settings = Administration.AppSettings()
                settings.deviceCheckTeamID = "TEAM123456"
                settings.deviceCheckKeyID = "KEY1234567"
                settings.deviceCheckKeyPath = keyFile
                settings.deviceCheckBaseURL = "http://127.0.0.1:\(port)"
                try await Administration(pool: service.owner).configureApp(tenant.appID, settings)
                try await service.withServer { client in try await body(service, tenant, state, client) }
            }
        }
    }

    static func claim(_ client: any TestClientProtocol, _ tenant: TestTenant, _ access: String, _ token: String) async throws -> JSONResponse {
        try await client.call(.post, "/v1/devicecheck/grant", apiKey: tenant.publishableKey, bearer: access, json: #"{"device_token":"\#(token)"}"#)
    }

    /// The credit balance of `user`, read as the owner.
    static func credits(_ service: TestService, _ user: UUID) async throws -> Int {
        try await service.count("SELECT credits_balance FROM public.users WHERE id = $1", [user])
    }

    /// Makes every pending claim a minute old, past its 30 s hold, as if time had passed: the next claim repairs it.
    static func agePendingClaims(_ service: TestService) async throws {
        try await service.owner.execute("UPDATE guestpass.devicecheck_claims SET updated_at = now() - interval '1 minute' WHERE state = 'pending'")
    }

    static func session(_ client: any TestClientProtocol, _ tenant: TestTenant) async throws -> (access: String, user: UUID) {
        let response = try await client.signUp(tenant, deviceSecret: UUID().uuidString)
        return (try #require(response.string("access_token")), try #require(UUID(uuidString: response.user?["id"]?.stringValue ?? "")))
    }

    @Test func onePhysicalDeviceGetsOneGrantAcrossReinstalls() async throws {
        try await Self.withGrantSetup { service, tenant, state, client in
            let first = try await Self.session(client, tenant)
            let granted = try await Self.claim(client, tenant, first.access, StandInState.makeDeviceToken(deviceID: "phone-1"))
            #expect(granted.status == .ok)
            #expect(granted["granted"] == .bool(true))
            #expect(granted["credits_granted"] == .number(10))
            #expect(granted["credits_balance"] == .number(10))
            #expect(await state.device("phone-1")?.bit0 == true)

            // The same user again, with a fresh token: already claimed.
            let again = try await Self.claim(client, tenant, first.access, StandInState.makeDeviceToken(deviceID: "phone-1"))
            #expect(again["granted"] == .bool(false))
            #expect(again.string("reason") == "already_claimed")

            // A reinstall: a new device secret, so a new guest, on the same phone.
            let reinstall = try await Self.session(client, tenant)
            let token = StandInState.makeDeviceToken(deviceID: "phone-1")
            let refused = try await Self.claim(client, tenant, reinstall.access, token)
            #expect(refused.status == .ok)
            #expect(refused["granted"] == .bool(false))
            #expect(refused.string("reason") == "device_already_claimed")
            // A token seen before is refused, whoever presents it.
            let thief = try await Self.session(client, tenant)
            let replayed = try await Self.claim(client, tenant, thief.access, token)
            #expect(replayed.status == .badRequest)
            #expect(replayed.errorCode == GoTrueCode.deviceTokenReused)
            // Another spelling of the same token (its padding removed) is the same token.
            let unpadded = String(token.reversed().drop(while: { $0 == "=" }).reversed())
            #expect(unpadded != token)
            let respelled = try await Self.claim(client, tenant, thief.access, unpadded)
            #expect(respelled.errorCode == GoTrueCode.deviceTokenReused, "\(respelled.text)")
            // A token that is not base64 is refused before it is recorded or sent to Apple.
            let tokensBefore = try await service.count("SELECT count(*) FROM guestpass.devicecheck_tokens")
            let malformed = try await Self.claim(client, tenant, thief.access, "not*base64")
            #expect(malformed.status == .badRequest)
            #expect(malformed.errorCode == GoTrueCode.invalidDeviceToken)
            #expect(try await service.count("SELECT count(*) FROM guestpass.devicecheck_tokens") == tokensBefore)

            // Another phone gets its own grant.
            let other = try await Self.session(client, tenant)
            #expect(try await Self.claim(client, tenant, other.access, StandInState.makeDeviceToken(deviceID: "phone-2"))["granted"] == .bool(true))

            #expect(await state.device("phone-1")?.updates == 1)
            #expect(try await Self.credits(service, first.user) == 10)
            #expect(try await Self.credits(service, reinstall.user) == 0)
            #expect(try await service.count("SELECT count(*) FROM public.users WHERE initial_grant_claimed") == 3)
            #expect(try await service.count("SELECT count(*) FROM guestpass.credit_ledger WHERE reason = 'welcome_grant'") == 2)
        }
    }

    @Test func fiftyConcurrentClaimsGrantOnce() async throws {
        try await Self.withGrantSetup { service, tenant, state, client in
            let guest = try await Self.session(client, tenant)
            let outcomes = try await withThrowingTaskGroup(of: JSONResponse.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-c")) }
                }
                return try await group.reduce(into: [JSONResponse]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0["granted"] == .bool(true) }.count == 1)
            #expect(outcomes.allSatisfy { $0.status == .ok || $0.status == .conflict })
            #expect(try await Self.credits(service, guest.user) == 10)
            #expect(try await service.count("SELECT count(*) FROM guestpass.credit_ledger WHERE user_id = $1", [guest.user]) == 1)
            #expect(await state.device("phone-c")?.updates == 1)
        }
    }

    /// A crash between Apple's update and the database commit leaves a pending claim; a later retry repairs it
    /// and grants exactly once.
    @Test func crashBetweenAppleAndCommitIsRepairedOnRetry() async throws {
        let crashes = NIOLockedValueBox(1)
        try await Self.withGrantSetup(crashAfterAppleUpdate: crashes) { service, tenant, state, client in
            let guest = try await Self.session(client, tenant)
            let crashed = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-x"))
            #expect(crashed.status.code >= 500)
            #expect(await state.device("phone-x")?.bit0 == true, "Apple's bit was set before the crash")
            #expect(try await Self.credits(service, guest.user) == 0)

            let tooSoon = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-x"))
            #expect(tooSoon.status == .conflict)
            // Time passes (the pending claim is older than its 30 s hold).
            try await Self.agePendingClaims(service)
            let repaired = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-x"))
            #expect(repaired.status == .ok)
            #expect(repaired["granted"] == .bool(true))
            #expect(try await Self.credits(service, guest.user) == 10)
            #expect(try await service.count("SELECT count(*) FROM guestpass.credit_ledger WHERE user_id = $1", [guest.user]) == 1)
            #expect(await state.device("phone-x")?.updates == 1)
        }
    }

    @Test func appleDownIsA503AndALaterRetryGrantsOnce() async throws {
        try await Self.withGrantSetup { service, tenant, state, client in
            let guest = try await Self.session(client, tenant)
            await state.injectFailure(StandInFailure(status: 503, count: 1, delay: .zero, body: nil, endpoints: ["query_two_bits"]))
            let down = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-d"))
            #expect(down.status == .serviceUnavailable)
            #expect(down.errorCode == GoTrueCode.devicecheckUnavailable)
            #expect(down.headers[.retryAfter] != nil)
            #expect(try await Self.credits(service, guest.user) == 0)

            // Down during the update: a second query at once shows the bit was not set, so the claim is closed.
            await state.injectFailure(StandInFailure(status: 503, count: 1, delay: .zero, body: nil, endpoints: ["update_two_bits"]))
            let midway = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-d"))
            #expect(midway.status == .serviceUnavailable)
            #expect(try await service.count("SELECT count(*) FROM guestpass.devicecheck_claims WHERE state = 'pending'") == 0)

            // Down during the update and for the query after it: the bit's fate is unknown, the claim stays pending
            // and is repaired later.
            await Self.failUpdateAndTheQueryAfterIt(state)
            let unknown = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-d"))
            #expect(unknown.status == .serviceUnavailable)
            #expect(try await service.count("SELECT count(*) FROM guestpass.devicecheck_claims WHERE state = 'pending'") == 1)
            try await Self.agePendingClaims(service)

            let granted = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-d"))
            #expect(granted["granted"] == .bool(true))
            let again = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-d"))
            #expect(again["granted"] == .bool(false))
            #expect(try await Self.credits(service, guest.user) == 10)
            #expect(await state.device("phone-d")?.updates == 1)

            let garbage = try await Self.claim(client, tenant, guest.access, "bm90LWEtdG9rZW4=")
            #expect(garbage.status == .badRequest || garbage["granted"] == .bool(false))
        }
    }

    @Test func badTokensAndAnonymousCallersAreRefused() async throws {
        try await Self.withGrantSetup { _, tenant, _, client in
            let guest = try await Self.session(client, tenant)
            let garbage = try await Self.claim(client, tenant, guest.access, "bm90LWEtdG9rZW4=")
            #expect(garbage.status == .badRequest)
            #expect(garbage.errorCode == GoTrueCode.invalidDeviceToken)
            let missing = try await client.call(.post, "/v1/devicecheck/grant", apiKey: tenant.publishableKey, bearer: guest.access, json: "{}")
            #expect(missing.status == .badRequest)
            let anonymous = try await client.call(.post, "/v1/devicecheck/grant", apiKey: tenant.publishableKey, json: #"{"device_token":"x"}"#)
            #expect(anonymous.status == .unauthorized)
        }
    }

    /// The first two queries (before and under the lease) answer normally; the update and the query after it fail,
    /// so the update's fate is unknown.
    static func failUpdateAndTheQueryAfterIt(_ state: StandInState) async {
        await state.injectFailure(StandInFailure(status: nil, count: 2, endpoints: ["query_two_bits"]))
        await state.injectFailure(StandInFailure(status: 503, count: 1, endpoints: ["update_two_bits"]))
        await state.injectFailure(StandInFailure(status: 503, count: 1, endpoints: ["query_two_bits"]))
    }

    /// Eight installs on one phone (eight guests, eight tokens of one device) claim at the same moment: Apple has no
    /// compare-and-set, so only the per-app lease stands between them and eight grants.
    @Test func eightGuestsOnOnePhoneClaimingAtOnceGetOneGrant() async throws {
        try await Self.withGrantSetup(appleLatency: .milliseconds(40)) { service, tenant, state, client in
            var guests: [(access: String, user: UUID)] = []
            for _ in 0..<8 { guests.append(try await Self.session(client, tenant)) }
            let installs = guests
            let outcomes = try await withThrowingTaskGroup(of: JSONResponse.self) { group in
                for guest in installs {
                    group.addTask { try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "shared-phone")) }
                }
                return try await group.reduce(into: [JSONResponse]()) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { $0.status == .ok }, "\(outcomes.map(\.text))")
            #expect(outcomes.filter { $0["granted"] == .bool(true) }.count == 1)
            let users = installs.map { $0.user.uuidString.lowercased() }.joined(separator: ",")
            #expect(
                try await service.count(
                    "SELECT coalesce(sum(credits_balance), 0)::int FROM public.users WHERE id = ANY(string_to_array($1, ',')::uuid[])", [users]) == 10
            )
            #expect(try await service.count("SELECT count(*) FROM guestpass.devicecheck_claims WHERE state = 'pending'") == 0, "every claim closed")
            #expect(try await service.count("SELECT count(*) FROM guestpass.devicecheck_leases") == 0, "the lease released")
            #expect(await state.device("shared-phone")?.updates == 1)
        }
    }

    /// A claim whose update's fate is unknown, then another install's grant on the same phone: the first claim's
    /// repair finds bit0 set, but cannot prove the bit is its own, and is refused.
    @Test func aRepairAfterAnotherInstallsGrantIsRefused() async throws {
        try await Self.withGrantSetup { service, tenant, state, client in
            let first = try await Self.session(client, tenant)
            await Self.failUpdateAndTheQueryAfterIt(state)
            let unknown = try await Self.claim(client, tenant, first.access, StandInState.makeDeviceToken(deviceID: "phone-r"))
            #expect(unknown.status == .serviceUnavailable)
            #expect(try await service.count("SELECT count(*) FROM guestpass.devicecheck_claims WHERE state = 'pending'") == 1)

            let second = try await Self.session(client, tenant)
            let granted = try await Self.claim(client, tenant, second.access, StandInState.makeDeviceToken(deviceID: "phone-r"))
            #expect(granted["granted"] == .bool(true), "the failed update never landed: the other install gets the grant")

            try await Self.agePendingClaims(service)
            let repaired = try await Self.claim(client, tenant, first.access, StandInState.makeDeviceToken(deviceID: "phone-r"))
            #expect(repaired.status == .ok)
            #expect(repaired["granted"] == .bool(false))
            #expect(try await Self.credits(service, first.user) == 0)
            #expect(try await Self.credits(service, second.user) == 10)
            #expect(try await service.count("SELECT count(*) FROM guestpass.devicecheck_claims WHERE reason = 'repair_unproven'") == 1)
        }
    }

    /// The claim runs outside the request's task: cancelling the request does not stop it.
    @Test func cancellingTheRequestDoesNotStopTheClaim() async throws {
        let finished = NIOLockedValueBox(false)
        let request = Task {
            try await DeviceCheckGrantRoutes.uncancellable {
                try await Task.sleep(for: .milliseconds(200))
                finished.withLockedValue { $0 = true }
            }
        }
        request.cancel()
        _ = await request.result
        #expect(try await eventually(timeout: .seconds(5)) { finished.withLockedValue { $0 } })
    }

    /// A client that sends its claim and hangs up while Apple has not answered: the claim still runs to its end.
    @Test func aClientThatHangsUpLeavesNoPendingClaim() async throws {
        try await Self.withGrantSetup(appleLatency: .seconds(1)) { service, tenant, state, client in
            let guest = try await Self.session(client, tenant)
            let port = try #require(client.port)
            let body = #"{"device_token":"\#(StandInState.makeDeviceToken(deviceID: "phone-h"))"}"#
            let connection = try RawHTTPConnection(
                port: port,
                sending: "POST /v1/devicecheck/grant HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: \(tenant.publishableKey)\r\n"
                    + "Authorization: Bearer \(guest.access)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            )
            // Hang up once the claim is open and waiting on Apple (a second per call), not after a guessed delay.
            let open = try await eventually(timeout: .seconds(10)) {
                try await service.count("SELECT count(*) FROM guestpass.devicecheck_claims WHERE user_id = $1 AND state = 'pending'", [guest.user])
                    == 1
            }
            connection.hangUp()
            try #require(open, "the claim was opened")
            let closed = try await eventually(timeout: .seconds(10)) {
                try await service.count("SELECT count(*) FROM guestpass.devicecheck_claims WHERE user_id = $1 AND state <> 'pending'", [guest.user])
                    == 1
            }
            #expect(closed, "the claim was finished after the client left")
            #expect(try await Self.credits(service, guest.user) == 10)
            #expect(await state.device("phone-h")?.updates == 1)
        }
    }
}
