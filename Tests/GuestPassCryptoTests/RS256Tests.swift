import Foundation
import Testing

@testable import GuestPassCrypto

@Suite struct RS256Tests {
    @Test func appleSignatureVerifiesWithPEMAndJWK() throws {
        let input = try Fixtures.bytes("apple_input.txt")
        let signature = try Fixtures.bytes("apple_sig.bin")
        let fromPEM = try RSAPublicKey(pemRepresentation: Fixtures.text("apple_W6WcOKB_pub.pem"))
        let fromJWK = try RSAPublicKey(jwk: ["kty": "RSA", "kid": "W6WcOKB", "use": "sig", "alg": "RS256", "e": "AQAB", "n": Fixtures.appleModulus])
        #expect(fromPEM.modulusBits == 2048)
        for key in [fromPEM, fromJWK] {
            #expect(key.isValidSignature(signature, for: input))
            var flipped = signature
            flipped[100] ^= 0x01
            #expect(!key.isValidSignature(flipped, for: input))
            var tampered = input
            tampered[tampered.count - 3] ^= 0x01
            #expect(!key.isValidSignature(signature, for: tampered))
            #expect(!key.isValidSignature(signature.dropLast(), for: input))
        }
    }

    @Test func rfc7638Thumbprint() throws {
        let key = try RSAPublicKey(jwkModulus: Fixtures.rfc7638Modulus, exponent: "AQAB")
        #expect(try key.thumbprint == Fixtures.rfc7638Thumbprint)
    }

    @Test func rejectsUnusableKeys() throws {
        #expect(throws: CryptoError.invalidJWK) { try RSAPublicKey(jwk: ["kty": "EC", "n": Fixtures.appleModulus, "e": "AQAB"]) }
        #expect(throws: CryptoError.invalidJWK) { try RSAPublicKey(jwk: ["kty": "RSA", "alg": "HS256", "n": Fixtures.appleModulus, "e": "AQAB"]) }
        // A 1024-bit modulus: the first 128 bytes of Apple's.
        let short = Base64URL.encode(try #require(Base64URL.decode(Fixtures.appleModulus)).prefix(128))
        #expect(throws: CryptoError.keyTooSmall) { try RSAPublicKey(jwkModulus: short, exponent: "AQAB") }
        // e = 1 would make every "signature" equal to its padded message.
        #expect(throws: CryptoError.invalidKey) { try RSAPublicKey(jwkModulus: Fixtures.appleModulus, exponent: "AQ") }
        #expect(throws: CryptoError.wrongKeyType) { try RSAPublicKey(pemRepresentation: Fixtures.text("a3_pub.pem")) }
    }

    /// The Apple stand-in's signer: what it signs, our verifier (checked above against Apple's real token) accepts under
    /// its kid and JWK, and no other key or a changed token does.
    @Test func privateKeySignsTokensTheVerifierAccepts() throws {
        struct Claims: Codable, Equatable {
            let sub: String
            let exp: Int
        }
        let key = try RSAPrivateKey.generate()
        #expect(try key.publicKey.modulusBits == 2048)
        let signer = try JWTSigner(key: key, keyID: "k1")
        #expect(signer.algorithm == .rs256)
        let claims = Claims(sub: "apple-user", exp: Int(Date().timeIntervalSince1970) + 600)
        let token = try signer.sign(claims)
        #expect(try JWTHeader.peek(token) == JWTHeader(algorithm: .rs256, keyID: "k1", type: "JWT"))

        let (modulus, exponent) = try key.publicKey.components
        let fromJWK = try RSAPublicKey(jwk: ["kty": "RSA", "n": Base64URL.encode(modulus), "e": Base64URL.encode(exponent)])
        #expect(try JWTVerifier(keys: [.rs256(fromJWK, keyID: "k1")]).verify(token, as: Claims.self) == claims)
        #expect(try JWTVerifier(keys: [signer.verificationKey]).verify(token, as: Claims.self) == claims)

        let other = try RSAPrivateKey.generate().publicKey
        #expect(throws: JWTError(.badSignature)) { try JWTVerifier(keys: [.rs256(other, keyID: "k1")]).verify(token) }
        let reloaded = try RSAPrivateKey(pemRepresentation: key.pkcs8PEMRepresentation)
        #expect(try reloaded.signature(for: Array("x".utf8)) == key.signature(for: Array("x".utf8)))
        #expect(throws: CryptoError.wrongKeyType) { try RSAPrivateKey(pemRepresentation: ES256PrivateKey.generate().pkcs8PEMRepresentation) }
        #expect(throws: JWTError(.malformed)) { try JWTHeader.peek("not a token") }
    }
}
