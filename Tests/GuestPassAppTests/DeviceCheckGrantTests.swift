import Foundation
import GuestPassApp
import GuestPassCrypto
import GuestPassDeviceCheckStandIn
import GuestPassPostgres
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOConcurrencyHelpers
import Testing

/// The welcome grant against the DeviceCheck stand-in (a real HTTP server speaking Apple's protocol).
@Suite struct DeviceCheckGrantTests {
    /// Starts the stand-in, points the tenant's settings at it, then runs `body` with the GuestPass server.
    static func withGrantSetup(
        crashAfterAppleUpdate: NIOLockedValueBox<Int> = NIOLockedValueBox(0),
        _ body: @Sendable (TestService, TestTenant, StandInState, any TestClientProtocol) async throws -> Void
    ) async throws {
        let appleKey = try ES256PrivateKey.generate()
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("dc-\(UUID()).p8").path
        try appleKey.pkcs8PEMRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        var configured = try await TestService.make(examples: true) { $0.signupBurstPerIP = 1000 }
        configured.configuration.afterAppleUpdate = {
            let crash = crashAfterAppleUpdate.withLockedValue { remaining in
                defer { remaining = max(0, remaining - 1) }
                return remaining > 0
            }
            if crash { throw CancellationError() }
        }
        let service = configured
        defer { Task { await service.tearDown() } }
        let tenant = try await service.createTenant()
        let state = StandInState()
        var logger = Logger(label: "standin")
        logger.logLevel = .warning
        let standIn = buildDeviceCheckStandIn(
            configuration: StandInConfiguration(teamID: "TEAM123456", keyID: "KEY1234567", publicKey: appleKey.publicKey), state: state,
            logger: logger
        )
        try await standIn.test(.live) { standInClient in
            let port = try #require(standInClient.port)
            try await service.owner.execute(
                """
                UPDATE guestpass.apps SET devicecheck_team_id = 'TEAM123456', devicecheck_key_id = 'KEY1234567',
                       devicecheck_key_path = $2, devicecheck_base_url = $3 WHERE id = $1
                """,
                [tenant.appID, keyFile, "http://127.0.0.1:\(port)"]
            )
            try await service.withServer { client in try await body(service, tenant, state, client) }
        }
    }

    static func claim(_ client: any TestClientProtocol, _ tenant: TestTenant, _ access: String, _ token: String) async throws -> JSONResponse {
        try await client.call(.post, "/v1/devicecheck/grant", apiKey: tenant.publishableKey, bearer: access, json: #"{"device_token":"\#(token)"}"#)
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
            #expect(replayed.errorCode == "device_token_reused")

            // Another phone gets its own grant.
            let other = try await Self.session(client, tenant)
            #expect(try await Self.claim(client, tenant, other.access, StandInState.makeDeviceToken(deviceID: "phone-2"))["granted"] == .bool(true))

            #expect(await state.device("phone-1")?.updates == 1)
            #expect(try await service.count("SELECT credits_balance FROM public.users WHERE id = $1", [first.user]) == 10)
            #expect(try await service.count("SELECT credits_balance FROM public.users WHERE id = $1", [reinstall.user]) == 0)
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
            #expect(try await service.count("SELECT credits_balance FROM public.users WHERE id = $1", [guest.user]) == 10)
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
            #expect(try await service.count("SELECT credits_balance FROM public.users WHERE id = $1", [guest.user]) == 0)

            let tooSoon = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-x"))
            #expect(tooSoon.status == .conflict)
            // Time passes (the pending claim is older than its 30 s hold).
            try await service.owner.execute("UPDATE guestpass.devicecheck_claims SET updated_at = now() - interval '1 minute' WHERE state = 'pending'")
            let repaired = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-x"))
            #expect(repaired.status == .ok)
            #expect(repaired["granted"] == .bool(true))
            #expect(try await service.count("SELECT credits_balance FROM public.users WHERE id = $1", [guest.user]) == 10)
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
            #expect(down.errorCode == "devicecheck_unavailable")
            #expect(down.headers[.retryAfter] != nil)
            #expect(try await service.count("SELECT credits_balance FROM public.users WHERE id = $1", [guest.user]) == 0)

            // Down during the update: the bit's fate is unknown, so the claim stays pending and is repaired later.
            await state.injectFailure(StandInFailure(status: 503, count: 1, delay: .zero, body: nil, endpoints: ["update_two_bits"]))
            let midway = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-d"))
            #expect(midway.status == .serviceUnavailable)
            try await service.owner.execute("UPDATE guestpass.devicecheck_claims SET updated_at = now() - interval '1 minute' WHERE state = 'pending'")

            let granted = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-d"))
            #expect(granted["granted"] == .bool(true))
            let again = try await Self.claim(client, tenant, guest.access, StandInState.makeDeviceToken(deviceID: "phone-d"))
            #expect(again["granted"] == .bool(false))
            #expect(try await service.count("SELECT credits_balance FROM public.users WHERE id = $1", [guest.user]) == 10)
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
            #expect(garbage.errorCode == "invalid_device_token")
            let missing = try await client.call(.post, "/v1/devicecheck/grant", apiKey: tenant.publishableKey, bearer: guest.access, json: "{}")
            #expect(missing.status == .badRequest)
            let anonymous = try await client.call(.post, "/v1/devicecheck/grant", apiKey: tenant.publishableKey, json: #"{"device_token":"x"}"#)
            #expect(anonymous.status == .unauthorized)
        }
    }
}
