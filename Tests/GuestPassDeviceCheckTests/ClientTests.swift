import Foundation
import GuestPassCrypto
import GuestPassDeviceCheck
import GuestPassDeviceCheckStandIn
import Testing
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore

/// The production client against the stand-in over real HTTP.
@Suite struct ClientTests {
    @Test func queryOnNewDeviceReadsBothFalse() async throws {
        try await withStandIn { standIn in
            let bits = try await standIn.client().queryTwoBits(StandInState.makeDeviceToken(deviceID: "phone-new"))
            #expect(bits == .neverSet)
            #expect(bits.lastUpdateTime == nil)
            // The stand-in answered Apple's plain-text 200.
            let last = try #require(await standIn.state.requests.last)
            #expect(last.status == 200)
        }
    }

    @Test func updateThenQuery() async throws {
        try await withStandIn { standIn in
            let client = standIn.client()
            try await client.updateTwoBits(StandInState.makeDeviceToken(deviceID: "phone-1"), bit0: true, bit1: false)
            let bits = try await client.queryTwoBits(StandInState.makeDeviceToken(deviceID: "phone-1"))
            #expect(bits.bit0 == true)
            #expect(bits.bit1 == false)
            #expect(bits.lastUpdateTime == currentMonth)
            #expect(bits.wasEverSet)
            let device = try #require(await standIn.state.device("phone-1"))
            #expect(device.updates == 1)
        }
    }

    @Test func tokensOfOneDeviceShareBitsAndOtherDevicesDoNot() async throws {
        try await withStandIn { standIn in
            let client = standIn.client()
            let first = StandInState.makeDeviceToken(deviceID: "phone-A")
            let reinstall = StandInState.makeDeviceToken(deviceID: "phone-A")
            #expect(first != reinstall)
            try await client.updateTwoBits(first, bit0: true, bit1: true)
            let same = try await client.queryTwoBits(reinstall)
            #expect(same.bit0 && same.bit1)
            let other = try await client.queryTwoBits(StandInState.makeDeviceToken(deviceID: "phone-B"))
            #expect(other == .neverSet)
        }
    }

    @Test func validateDeviceToken() async throws {
        try await withStandIn { standIn in
            try await standIn.client().validateDeviceToken(StandInState.makeDeviceToken(deviceID: "phone-v"))
            // A well-formed base64 token that decodes without "device:nonce" is refused by the server, not locally.
            let notADevice = Data("no colon here".utf8).base64EncodedString()
            let kind = await errorKind { try await standIn.client().validateDeviceToken(notADevice) }
            #expect(kind == .badDeviceToken)
            #expect(await standIn.state.requests.last?.status == 400)
        }
    }

    @Test func wrongKeyWithSameKidIsUnauthorized() async throws {
        try await withStandIn { standIn in
            let client = standIn.client(privateKey: try ES256PrivateKey.generate())
            let kind = await errorKind { _ = try await client.queryTwoBits(StandInState.makeDeviceToken(deviceID: "p")) }
            #expect(kind == .unauthorized)
            #expect(await standIn.state.requests.map(\.status) == [401])
        }
    }

    @Test func wrongTeamOrKidIsUnauthorized() async throws {
        try await withStandIn { standIn in
            let token = StandInState.makeDeviceToken(deviceID: "p")
            let wrongTeam = await errorKind { _ = try await standIn.client(teamID: "OTHERTEAM1").queryTwoBits(token) }
            #expect(wrongTeam == .unauthorized)
            let wrongKid = await errorKind { try await standIn.client(keyID: "OTHERKEY01").updateTwoBits(token, bit0: true, bit1: false) }
            #expect(wrongKid == .unauthorized)
            #expect(await standIn.state.device("p") == nil)
        }
    }

    @Test func garbageTokensAreRejectedLocally() async throws {
        try await withStandIn { standIn in
            let client = standIn.client()
            let tooLong = String(repeating: "A", count: 4100)
            let lineBroken = "QUJD\nREVG"
            for token in ["", "not base64!", "abc$def", lineBroken, tooLong, "AB=C", "===="] {
                let kind = await errorKind { _ = try await client.queryTwoBits(token) }
                #expect(kind == .badDeviceToken, "token \(token.prefix(12).debugDescription)")
            }
            #expect(await standIn.state.requests.isEmpty)
        }
    }

    @Test func injected503IsUnavailableThenRecovers() async throws {
        try await withStandIn { standIn in
            let client = standIn.client()
            let token = StandInState.makeDeviceToken(deviceID: "phone-503")
            await standIn.state.injectFailure(StandInFailure(status: 503, count: 1, endpoints: ["update_two_bits"]))
            do {
                try await client.updateTwoBits(token, bit0: true, bit1: false)
                Issue.record("expected a failure")
            } catch let error as DeviceCheckError {
                #expect(error.kind == .unavailable)
                #expect(error.status == 503)
                #expect(error.isRetryable)
            }
            try await client.updateTwoBits(token, bit0: true, bit1: false)
            #expect(await standIn.state.device("phone-503")?.updates == 1)
        }
    }

    @Test func failuresInjectedOverHTTPApplyToTheirPathsOnly() async throws {
        try await withStandIn { standIn in
            let plan = #"{"status": 503, "count": 2, "delay_ms": 0, "body": "down", "paths": ["update_two_bits"]}"#
            #expect(try await standIn.post("/_standin/failures", json: plan).status == 200)
            let client = standIn.client()
            let token = StandInState.makeDeviceToken(deviceID: "phone-plan")
            _ = try await client.queryTwoBits(token)  // not a matching path
            for _ in 0..<2 {
                let kind = await errorKind { try await client.updateTwoBits(token, bit0: false, bit1: true) }
                #expect(kind == .unavailable)
            }
            try await client.updateTwoBits(token, bit0: false, bit1: true)
            let response = try await standIn.http.execute(uri: "/_standin/devices/phone-plan", method: .get)
            let snapshot = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
            #expect(snapshot?["bit1"] as? Bool == true)
            #expect(snapshot?["updates"] as? Int == 1)
            #expect(try await standIn.post("/_standin/reset", json: "").status == 200)
            #expect(await standIn.state.device("phone-plan") == nil)
        }
    }

    @Test func delayBeyondTheTimeoutIsUnavailable() async throws {
        try await withStandIn { standIn in
            let client = standIn.client(timeout: .milliseconds(300))
            // The stand-in answers after 10 s; the client must give up long before (6 s is 20 times its timeout: room for
            // a machine so busy that timers fire seconds late, as a full parallel run on two cores can be).
            await standIn.state.injectFailure(StandInFailure(status: nil, count: 1, delay: .seconds(10)))
            let started = ContinuousClock.now
            let kind = await errorKind { _ = try await client.queryTwoBits(StandInState.makeDeviceToken(deviceID: "slow")) }
            let elapsed = ContinuousClock.now - started
            #expect(kind == .unavailable)
            #expect(elapsed < .seconds(6), "gave up after \(elapsed), not at its 300 ms timeout")
            // A short delay within the timeout is answered normally (a roomier timeout: CI machines are busy).
            let patient = standIn.client(timeout: .seconds(5))
            await standIn.state.injectFailure(StandInFailure(status: nil, count: 1, delay: .milliseconds(50)))
            let bits = try await patient.queryTwoBits(StandInState.makeDeviceToken(deviceID: "slow"))
            #expect(bits == .neverSet)
        }
    }

    @Test func statusClassification() async throws {
        try await withStandIn { standIn in
            let client = standIn.client()
            let token = StandInState.makeDeviceToken(deviceID: "phone-status")
            let cases: [(StandInFailure, DeviceCheckError.Kind)] = [
                (StandInFailure(status: 429), .rateLimited),
                (StandInFailure(status: 500), .unavailable),
                (StandInFailure(status: 403), .unauthorized),
                (StandInFailure(status: 400, body: "Missing or incorrectly formatted bits"), .badRequest("Missing or incorrectly formatted bits")),
                (StandInFailure(status: 400, body: "Missing or incorrectly formatted device token payload"), .badDeviceToken),
                (StandInFailure(status: 200, body: "<html>surprise</html>"), .malformedResponse),
            ]
            for (failure, expected) in cases {
                await standIn.state.injectFailure(failure)
                let kind = await errorKind { _ = try await client.queryTwoBits(token) }
                #expect(kind == expected, "status \(failure.status ?? 0)")
            }
            // The literal "Bit State Not Found" label also reads as never set.
            await standIn.state.injectFailure(StandInFailure(status: 200, body: "Bit State Not Found"))
            let bits = try await client.queryTwoBits(token)
            #expect(bits == .neverSet)
        }
    }

    @Test func connectionRefusedIsUnavailable() async throws {
        let client = DeviceCheckClient(
            configuration: DeviceCheckConfiguration(
                teamID: StandInHarness.teamID,
                keyID: StandInHarness.keyID,
                privateKey: try ES256PrivateKey.generate(),
                baseURL: URL(string: "http://127.0.0.1:1")!,
                timeout: .milliseconds(500)
            ),
            logger: .init(label: "test")
        )
        let kind = await errorKind { try await client.validateDeviceToken(StandInState.makeDeviceToken(deviceID: "x")) }
        #expect(kind == .unavailable)
    }

    @Test func sentJWTIsAppleShapedAndReused() async throws {
        try await withStandIn { standIn in
            let client = standIn.client()
            let token = StandInState.makeDeviceToken(deviceID: "phone-jwt")
            try await client.validateDeviceToken(token)
            _ = try await client.queryTwoBits(token)
            let requests = await standIn.state.requests
            #expect(requests.count == 2)
            let jwt = try #require(requests[0].bearerToken)
            #expect(requests[1].bearerToken == jwt, "the JWT is cached between calls")

            let verifier = try JWTVerifier(
                keys: [.es256(standIn.privateKey.publicKey, keyID: StandInHarness.keyID)],
                issuers: [StandInHarness.teamID],
                audiences: nil,
                requiresExpiration: false
            )
            let verified = try verifier.verify(jwt)
            #expect(verified.header.algorithm == .es256)
            #expect(verified.header.keyID == StandInHarness.keyID)
            let claims = try #require(try JSONSerialization.jsonObject(with: verified.payload) as? [String: Any])
            #expect(claims["iss"] as? String == StandInHarness.teamID)
            let issuedAt = try #require(claims["iat"] as? Int)
            #expect(abs(Double(issuedAt) - Date().timeIntervalSince1970) < 60)
            let segments = jwt.split(separator: ".")
            #expect(segments.count == 3)
            #expect(Base64URL.decode(String(segments[2]))?.count == 64)
        }
    }

    @Test func a401OnAReusedJWTIsRetriedOnceWithANewOne() async throws {
        try await withStandIn { standIn in
            let client = standIn.client()
            let token = StandInState.makeDeviceToken(deviceID: "phone-401")
            try await client.validateDeviceToken(token)
            await standIn.state.injectFailure(StandInFailure(status: 401))
            try await client.validateDeviceToken(token)
            let requests = await standIn.state.requests
            #expect(requests.map(\.status) == [200, 401, 200])
            #expect(requests[1].bearerToken == requests[0].bearerToken)
            #expect(requests[2].bearerToken != requests[1].bearerToken)
            // A fresh JWT refused is not retried.
            await standIn.state.injectFailure(StandInFailure(status: 401))
            let kind = await errorKind { try await standIn.client().validateDeviceToken(token) }
            #expect(kind == .unauthorized)
        }
    }

    @Test func requestBodyIsAppleShaped() async throws {
        try await withStandIn { standIn in
            let token = StandInState.makeDeviceToken(deviceID: "phone-body")
            try await standIn.client().updateTwoBits(token, bit0: false, bit1: true)
            try await standIn.client().updateTwoBits(token, bit0: false, bit1: true)
            let requests = await standIn.state.requests
            let bodies = try requests.map { try #require(try JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any]) }
            let body = bodies[0]
            #expect(body["device_token"] as? String == token)
            #expect(body["bit0"] as? Bool == false)
            #expect(body["bit1"] as? Bool == true)
            let timestamp = try #require(body["timestamp"] as? Int64 ?? (body["timestamp"] as? Int).map(Int64.init))
            #expect(abs(timestamp - StandInHarness.nowMilliseconds) < 60_000, "milliseconds, not seconds")
            let transactionID = try #require(body["transaction_id"] as? String)
            let uuid = try #require(UUID(uuidString: transactionID))
            #expect(uuid.uuidString.lowercased().dropFirst(14).first == "4", "UUID v4")
            #expect(bodies[1]["transaction_id"] as? String != transactionID)
        }
    }

    @Test func errorDescriptionsNeverLeakTokens() async throws {
        try await withStandIn { standIn in
            let client = standIn.client()
            let token = StandInState.makeDeviceToken(deviceID: "phone-leak")
            await standIn.state.injectFailure(StandInFailure(status: 400, body: "bad bits for \(token)"))
            await standIn.state.injectFailure(StandInFailure(status: 401, count: 2))  // the client retries a 401 once
            for _ in 0..<2 {
                do {
                    _ = try await client.queryTwoBits(token)
                    Issue.record("expected a failure")
                } catch {
                    let text = "\(error) \(String(reflecting: error))"
                    #expect(!text.contains(token))
                    let jwt = try #require(await standIn.state.requests.last?.bearerToken)
                    #expect(!text.contains(jwt))
                    #expect(!text.contains(jwt.split(separator: ".")[2]))
                }
            }
        }
    }
}
