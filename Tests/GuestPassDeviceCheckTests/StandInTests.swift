import Foundation
import GuestPassCrypto
import GuestPassDeviceCheckStandIn
import Hummingbird
import HummingbirdTesting
import Testing

/// The stand-in's protocol checks, called directly over HTTP.
@Suite struct StandInTests {
    private func body(_ token: String, timestamp: Int64 = StandInHarness.nowMilliseconds, extra: String = "") -> String {
        #"{"device_token":"\#(token)","transaction_id":"\#(UUID().uuidString)","timestamp":\#(timestamp)\#(extra)}"#
    }

    @Test func timestampInSecondsIsRejected() async throws {
        try await withStandIn { standIn in
            let token = StandInState.makeDeviceToken(deviceID: "d")
            let seconds = StandInHarness.nowMilliseconds / 1000
            let auth = try standIn.authorization()
            let reply = try await standIn.post("/v1/query_two_bits", json: body(token, timestamp: seconds), authorization: auth)
            #expect(reply.status == 400)
            #expect(reply.body == "Missing or incorrectly formatted time stamp")
            let ok = try await standIn.post("/v1/query_two_bits", json: body(token), authorization: try standIn.authorization())
            #expect(ok.status == 200)
            #expect(ok.body == "Failed to find bit state")
        }
    }

    @Test func authorizationChecks() async throws {
        try await withStandIn { standIn in
            let json = body(StandInState.makeDeviceToken(deviceID: "d"))
            let missing = try await standIn.post("/v1/validate_device_token", json: json)
            #expect(missing.status == 400)
            #expect(missing.body == "Missing or badly formatted authorization token")
            let garbled = try await standIn.post("/v1/validate_device_token", json: json, authorization: "Bearer nonsense")
            #expect(garbled.status == 400)
            let old = try await standIn.post(
                "/v1/validate_device_token",
                json: json,
                authorization: try standIn.authorization(issuedAt: Date().addingTimeInterval(-3700))
            )
            #expect(old.status == 401)
            #expect(old.body == "Unable to verify authorization token")
            let future = try await standIn.post(
                "/v1/validate_device_token",
                json: json,
                authorization: try standIn.authorization(issuedAt: Date().addingTimeInterval(300))
            )
            #expect(future.status == 401)
            let fine = try await standIn.post("/v1/validate_device_token", json: json, authorization: try standIn.authorization())
            #expect(fine.status == 200)
            #expect(fine.body.isEmpty)
        }
    }

    @Test func payloadChecks() async throws {
        try await withStandIn { standIn in
            let auth = try standIn.authorization()
            let token = StandInState.makeDeviceToken(deviceID: "d")
            let noBits = try await standIn.post("/v1/update_two_bits", json: body(token), authorization: auth)
            #expect(noBits == (400, "Missing or incorrectly formatted bits"))
            let badBit = try await standIn.post("/v1/update_two_bits", json: body(token, extra: #","bit0":1"#), authorization: auth)
            #expect(badBit.status == 400)
            let oneBit = try await standIn.post("/v1/update_two_bits", json: body(token, extra: #","bit1":true"#), authorization: auth)
            #expect(oneBit.status == 200)
            let query = try await standIn.post("/v1/query_two_bits", json: body(token), authorization: auth)
            let bits = try JSONSerialization.jsonObject(with: Data(query.body.utf8)) as? [String: Any]
            #expect(bits?["bit0"] as? Bool == false)
            #expect(bits?["bit1"] as? Bool == true)
            #expect(bits?["last_update_time"] as? String == currentMonth)

            let badToken = try await standIn.post("/v1/query_two_bits", json: body("%%%"), authorization: auth)
            #expect(badToken == (400, "Missing or incorrectly formatted device token payload"))
            let notJSON = try await standIn.post("/v1/query_two_bits", json: "device_token=x", authorization: auth)
            #expect(notJSON.status == 400)
            let stringTimestamp = #"{"device_token":"\#(token)","transaction_id":"t","timestamp":"\#(StandInHarness.nowMilliseconds)"}"#
            #expect(try await standIn.post("/v1/query_two_bits", json: stringTimestamp, authorization: auth).status == 400)
        }
    }

    @Test func otherMethodsAreNotAllowed() async throws {
        try await withStandIn { standIn in
            let response = try await standIn.http.execute(uri: "/v1/query_two_bits", method: .get)
            #expect(response.status == .methodNotAllowed)
            #expect(String(decoding: response.body.readableBytesView, as: UTF8.self) == "Method Not Allowed")
        }
    }

    @Test func deviceTokens() throws {
        let token = StandInState.makeDeviceToken(deviceID: "phone:1")
        #expect(StandInState.deviceID(fromToken: token) == "phone:1")
        #expect(Data(base64Encoded: token) != nil)
        #expect(StandInState.deviceID(fromToken: Data("nocolon".utf8).base64EncodedString()) == nil)
        #expect(StandInState.deviceID(fromToken: Data(":nonce".utf8).base64EncodedString()) == nil)
        #expect(StandInState.deviceID(fromToken: "not base64") == nil)
    }

    @Test func controlEndpointsAndStateAPI() async throws {
        try await withStandIn { standIn in
            await standIn.state.setBits(deviceID: "seeded", bit0: true, bit1: nil)
            let response = try await standIn.http.execute(uri: "/_standin/devices/seeded", method: .get)
            let snapshot = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
            #expect(snapshot?["bit0"] as? Bool == true)
            #expect(snapshot?["updates"] as? Int == 1)
            let unknown = try await standIn.http.execute(uri: "/_standin/devices/nobody", method: .get)
            let empty = try JSONSerialization.jsonObject(with: Data(unknown.body.readableBytesView)) as? [String: Any]
            #expect(empty?["updates"] as? Int == 0)
            let minted = try await standIn.http.execute(uri: "/_standin/devices/seeded/token", method: .get)
            let token = String(decoding: minted.body.readableBytesView, as: UTF8.self)
            #expect(StandInState.deviceID(fromToken: token) == "seeded")
            #expect(try await standIn.post("/_standin/failures", json: "{").status == 400)
            #expect(try await standIn.post("/_standin/failures", json: #"{"status":429,"count":3}"#).status == 200)
            #expect(await standIn.state.pendingFailures.first?.count == 3)
            await standIn.state.reset()
            #expect(await standIn.state.pendingFailures.isEmpty)
            #expect(await standIn.state.device("seeded") == nil)
        }
    }
}
