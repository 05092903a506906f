import Testing

@testable import GuestPassCrypto

/// AES-256-GCM boxes (Apple's refresh tokens at rest): they open only with the same key and associated data, and any
/// changed byte is refused.
@Suite struct AESGCMTests {
    @Test func sealsAndOpensOnlyWithTheSameKeyAndBinding() throws {
        let key = try SecureRandom.bytes(32)
        let secret = Array("r.apple-refresh-token".utf8)
        let box = try AESGCM.seal(secret, key: key, associatedData: Array("app:sub".utf8))
        #expect(box.count == 12 + secret.count + 16)
        #expect(!box.indices.dropLast(secret.count).contains { Array(box[$0..<min($0 + secret.count, box.count)]) == secret })
        #expect(AESGCM.open(box, key: key, associatedData: Array("app:sub".utf8)) == secret)
        #expect(AESGCM.open(box, key: key, associatedData: Array("app:other".utf8)) == nil)
        #expect(AESGCM.open(box, key: try SecureRandom.bytes(32), associatedData: Array("app:sub".utf8)) == nil)
        for index in [0, 12, box.count - 1] {
            var altered = box
            altered[index] ^= 0x01
            #expect(AESGCM.open(altered, key: key, associatedData: Array("app:sub".utf8)) == nil)
        }
        #expect(try AESGCM.seal(secret, key: key) != AESGCM.seal(secret, key: key), "a fresh nonce per seal")
        #expect(throws: CryptoError.invalidKey) { try AESGCM.seal(secret, key: [1, 2, 3]) }
    }
}
