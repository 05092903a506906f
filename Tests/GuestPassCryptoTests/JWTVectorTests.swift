import Foundation
import Testing

@testable import GuestPassCrypto

/// The published vectors: RFC 7515 A.1 (HS256), A.3 (ES256), a real Sign in with Apple id token (RS256),
/// and the negative vectors of apple-jwt.md §5.4.
@Suite struct JWTVectorTests {
    @Test func rfc7515A1HS256Verifies() throws {
        let key = try HS256Key(secret: #require(Base64URL.decode(Fixtures.a1Key)))
        let verifier = try JWTVerifier(keys: [.hs256(key, keyID: "a1")], issuers: ["joe"])
        let claims = try verifier.verify(Fixtures.a1Token, as: RFCClaims.self, now: Fixtures.rfcNow)
        #expect(claims == RFCClaims(iss: "joe", exp: Date(timeIntervalSince1970: 1_300_819_380), isRoot: true))

        let verified = try verifier.verify(Fixtures.a1Token, now: Fixtures.rfcNow)
        #expect(verified.header == JWTHeader(algorithm: .hs256, keyID: nil, type: "JWT"))
        #expect(String(decoding: verified.payload, as: UTF8.self).hasPrefix("{\"iss\":\"joe\",\r\n \"exp\""))
        #expect(Base64URL.decode(Forge.segments(Fixtures.a1Token)[2]) == [UInt8](hex: Fixtures.a1MACHex))

        #expect(throws: JWTError(.expired)) { try verifier.verify(Fixtures.a1Token, now: Date()) }
    }

    @Test func rfc7515A3ES256Verifies() throws {
        let verifier = try JWTVerifier(keys: [.es256(Fixtures.a3PublicKey(), keyID: "a3")], issuers: ["joe"])
        let claims = try verifier.verify(Fixtures.a3Token, as: RFCClaims.self, now: Fixtures.rfcNow)
        #expect(claims.isRoot)

        var signature = try #require(Base64URL.decode(Fixtures.a3SignatureSegment))
        signature[5] ^= 0x80
        let flipped = Forge.segments(Fixtures.a3Token).prefix(2).joined(separator: ".") + "." + Base64URL.encode(signature)
        #expect(throws: JWTError(.badSignature)) { try verifier.verify(flipped, now: Fixtures.rfcNow) }
    }

    @Test func derSignatureInATokenIsRejected() throws {
        let verifier = try JWTVerifier(keys: [.es256(Fixtures.a3PublicKey())])
        let der = try Fixtures.bytes("a3_sig.der")
        let token = "eyJhbGciOiJFUzI1NiJ9." + Fixtures.rfcPayloadSegment + "." + Base64URL.encode(der)
        // The same value as the §5.4 negative vector.
        #expect(token.hasSuffix(".MEUCIA7RIVN5Y2xIPC9_FVgH1AKjsigDOvl8fheBmsMWnqZlAiEAxQoH04w8cOXY8S2vCEpUgKZlkMXyk1Cajz9_ioOjVNU"))
        #expect(throws: JWTError(.badSignature)) { try verifier.verify(token, now: Fixtures.rfcNow) }
    }

    @Test func psychicSignatureIsRejected() throws {
        let verifier = try JWTVerifier(keys: [.es256(Fixtures.a3PublicKey())])
        let token = "eyJhbGciOiJFUzI1NiJ9." + Fixtures.rfcPayloadSegment + "." + Base64URL.encode([UInt8](repeating: 0, count: 64))
        #expect(throws: JWTError(.badSignature)) { try verifier.verify(token, now: Fixtures.rfcNow) }
    }

    @Test(arguments: [#"{"alg":"none"}"#, #"{"alg":"none","kid":"a3"}"#, #"{"alg":"None"}"#, #"{"alg":"HS512"}"#, #"{"typ":"JWT"}"#])
    func unsupportedAlgorithmsAreRejected(_ header: String) throws {
        let verifier = try JWTVerifier(keys: [.es256(Fixtures.a3PublicKey(), keyID: "a3")])
        let token = Base64URL.encode(Array(header.utf8)) + "." + Fixtures.rfcPayloadSegment + "."
        #expect(throws: JWTError(.unsupportedAlgorithm)) { try verifier.verify(token, now: Fixtures.rfcNow) }
        // The RFC 7515 A.5 unsecured token itself.
        let rfcNone = "eyJhbGciOiJub25lIn0." + Fixtures.rfcPayloadSegment + "."
        #expect(throws: JWTError(.unsupportedAlgorithm)) { try verifier.verify(rfcNone, now: Fixtures.rfcNow) }
    }

    @Test func algorithmConfusionIsRejected() throws {
        let publicKey = try Fixtures.a3PublicKey()
        let pem = try Fixtures.bytes("a3_pub.pem")
        let jwkJSON = try JWKSet([.es256(publicKey)]).jsonData()
        let verifier = try JWTVerifier(keys: [.es256(publicKey, keyID: "a3")])

        // The §5.4 vector: {"alg":"HS256"} MACed with the PEM text. No HS256 key is configured.
        let vector = "eyJhbGciOiJIUzI1NiJ9." + Fixtures.rfcPayloadSegment + ".b5WqE1XtY4mvcC8dN0okAZYTHi0BCdK728HRDm4URAg"
        let reproduced = "eyJhbGciOiJIUzI1NiJ9." + Fixtures.rfcPayloadSegment
        #expect(Base64URL.encode(HMACSHA256.authenticationCode(for: Array(reproduced.utf8), key: pem)) == Forge.segments(vector)[2])
        #expect(throws: JWTError(.unknownKey)) { try verifier.verify(vector, now: Fixtures.rfcNow) }

        // The same attack aimed at the ES256 key by kid, with the PEM or the JWK JSON as the HMAC secret.
        for secret in [pem, Array(jwkJSON), publicKey.x + publicKey.y] {
            let forged = Forge.token(header: #"{"alg":"HS256","kid":"a3"}"#, payload: #"{"exp":1300819380}"#) {
                HMACSHA256.authenticationCode(for: $0, key: secret)
            }
            #expect(throws: JWTError(.algorithmMismatch)) { try verifier.verify(forged, now: Fixtures.rfcNow) }
        }

        // With an unrelated HS256 key configured, the kid-less forgery is checked against that key only.
        let mixed = try JWTVerifier(keys: [.es256(publicKey, keyID: "a3"), .hs256(HS256Key.generate(), keyID: "h")])
        #expect(throws: JWTError(.badSignature)) { try mixed.verify(vector, now: Fixtures.rfcNow) }
    }

    @Test func appleIDTokenVerifies() throws {
        let key = try RSAPublicKey(jwk: ["kty": "RSA", "alg": "RS256", "e": "AQAB", "n": Fixtures.appleModulus])
        let verifier = try JWTVerifier(
            keys: [.rs256(key, keyID: "W6WcOKB")], issuers: ["https://appleid.apple.com"], audiences: ["app.namecare.ios"])
        struct AppleClaims: Decodable {
            let sub: String
            let email_verified: String
        }
        let token = try Fixtures.appleToken()
        let claims = try verifier.verify(token, as: AppleClaims.self, now: Fixtures.appleNow)
        #expect(claims.sub == "001091.22c0ca594d4243c58edf3553540380b5.2045")
        #expect(claims.email_verified == "true")
        #expect(try verifier.verify(token, now: Fixtures.appleNow).header == JWTHeader(algorithm: .rs256, keyID: "W6WcOKB", type: nil))

        #expect(throws: JWTError(.expired)) { try verifier.verify(token, now: Date()) }
        let otherAudience = try JWTVerifier(keys: [.rs256(key, keyID: "W6WcOKB")], audiences: ["com.example.other"])
        #expect(throws: JWTError(.wrongAudience)) { try otherAudience.verify(token, now: Fixtures.appleNow) }
        let otherKeyID = try JWTVerifier(keys: [.rs256(key, keyID: "rotated")], audiences: ["app.namecare.ios"])
        #expect(throws: JWTError(.unknownKey)) { try otherKeyID.verify(token, now: Fixtures.appleNow) }
    }
}
