import Foundation
import GuestPassCrypto
import Testing

@testable import GuestPassDeviceCheck

/// Client pieces that need no server.
@Suite struct UnitTests {
    @Test func environmentBaseURLs() {
        #expect(DeviceCheckConfiguration.environmentBaseURL("production")?.absoluteString == "https://api.devicecheck.apple.com")
        #expect(
            DeviceCheckConfiguration.environmentBaseURL("Development")?.absoluteString
                == "https://api.development.devicecheck.apple.com"
        )
        #expect(DeviceCheckConfiguration.environmentBaseURL("staging") == nil)
    }

    @Test func endpointURLs() throws {
        let key = try ES256PrivateKey.generate()
        for base in ["https://api.devicecheck.apple.com", "https://api.devicecheck.apple.com/", "https://api.devicecheck.apple.com/v1"] {
            let configuration = DeviceCheckConfiguration(teamID: "T", keyID: "K", privateKey: key, baseURL: URL(string: base)!)
            #expect(configuration.endpointURL("query_two_bits") == "https://api.devicecheck.apple.com/v1/query_two_bits")
        }
    }

    @Test func deviceTokenValidation() {
        #expect(DeviceToken.isWellFormed("wlkCDA2Hy/CfrMqVAShs1BAR/0sAiuRIUm5jQg0a+=="))
        #expect(DeviceToken.isWellFormed(String(repeating: "A", count: 4096)))
        for bad in ["", "=", "a b", "ab\r\ncd", "ab-_", "a=b", "abc===", String(repeating: "A", count: 4097)] {
            #expect(!DeviceToken.isWellFormed(bad), "\(bad.prefix(10).debugDescription)")
        }
    }

    /// One token has one identity, however it is spelled: replay detection keys on the decoded bytes.
    @Test func deviceTokenSpellingsShareOneIdentity() throws {
        let padded = try #require(DeviceToken("QUI="))
        #expect(padded.canonical == "QUI=")
        for spelling in ["QUI", "QUJ=", "QUJ", "QUL="] {
            #expect(DeviceToken(spelling)?.hashHex == padded.hashHex, "\(spelling)")
            #expect(DeviceToken(spelling)?.canonical == "QUI=", "\(spelling)")
        }
        #expect(padded.hashHex == Digest.sha256Hex(Array("AB".utf8)))
        #expect(DeviceToken("QUJD")?.hashHex != padded.hashHex)
        for bad in ["", "Q", "QUJDR", "QU=I", "QUI-", "QUI_", "QUI=\n", "=", "===="] {
            #expect(DeviceToken(bad) == nil, "\(bad.debugDescription)")
        }
    }

    @Test func authorizationTokenIsCachedFor20Minutes() async throws {
        let key = try ES256PrivateKey.generate()
        let cache = AuthorizationTokenCache(teamID: "TEAM123456", keyID: "KEY1234567", privateKey: key)
        let start = Date()
        let first = try await cache.token(now: start)
        #expect(first.isFresh)
        let reused = try await cache.token(now: start.addingTimeInterval(19 * 60))
        #expect(!reused.isFresh)
        #expect(reused.value == first.value)
        let renewed = try await cache.token(now: start.addingTimeInterval(20 * 60 + 1))
        #expect(renewed.isFresh)
        #expect(renewed.issuedAt == Int(start.timeIntervalSince1970) + 20 * 60 + 1)
        await cache.invalidate(renewed.value)
        #expect(try await cache.token(now: start.addingTimeInterval(20 * 60 + 2)).isFresh)

        let verifier = try JWTVerifier(keys: [.es256(key.publicKey, keyID: "KEY1234567")], issuers: ["TEAM123456"], requiresExpiration: false)
        let header = try #require(Base64URL.decode(String(first.value.split(separator: ".")[0])))
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(header)) as? [String: String])
        #expect(fields["alg"] == "ES256")
        #expect(fields["kid"] == "KEY1234567")
        #expect(try verifier.verify(first.value, now: start).header.keyID == "KEY1234567")
    }

    @Test func responseClassification() throws {
        let token = "dGVzdA=="
        func kind(_ status: Int, _ body: String = "") -> DeviceCheckError.Kind? {
            do {
                _ = try DeviceCheckClient.check(status, body: Array(body.utf8), deviceToken: token)
                return nil
            } catch let error as DeviceCheckError {
                return error.kind
            } catch {
                return nil
            }
        }
        #expect(kind(200) == nil)
        #expect(kind(400, "Missing or incorrectly formatted DEVICE TOKEN payload") == .badDeviceToken)
        #expect(kind(400, "Missing or badly formatted authorization token") == .badRequest("Missing or badly formatted authorization token"))
        #expect(kind(401) == .unauthorized)
        #expect(kind(403) == .unauthorized)
        #expect(kind(404) == .badRequest(""))
        #expect(kind(429) == .rateLimited)
        #expect(kind(502) == .unavailable)
        #expect(kind(302) == .malformedResponse)
        #expect(DeviceCheckError(.unavailable).isRetryable)
        #expect(DeviceCheckError(.rateLimited).isRetryable)
        #expect(!DeviceCheckError(.badDeviceToken).isRetryable)
        #expect(!DeviceCheckError(.unauthorized).isRetryable)

        #expect(
            try DeviceCheckClient.parseBits(Array(#"{"bit0":true,"bit1":false,"last_update_time":"2026-09"}"#.utf8))
                == DeviceBits(bit0: true, bit1: false, lastUpdateTime: "2026-09"))
        #expect(try DeviceCheckClient.parseBits(Array("Failed to find bit state\n".utf8)) == .neverSet)
        #expect(throws: DeviceCheckError.self) { try DeviceCheckClient.parseBits(Array("{}".utf8)) }
        #expect(throws: DeviceCheckError.self) { try DeviceCheckClient.parseBits([]) }
    }
}
