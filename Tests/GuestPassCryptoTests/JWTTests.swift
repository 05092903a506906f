import Foundation
import Testing

@testable import GuestPassCrypto

@Suite struct JWTTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let signer: JWTSigner
    let verifier: JWTVerifier

    init() throws {
        self.signer = JWTSigner(key: try ES256PrivateKey.generate())
        self.verifier = try JWTVerifier(
            keys: [self.signer.verificationKey], issuers: ["https://guestpass.test"], audiences: ["api"])
    }

    func claims(exp: TimeInterval? = 600, nbf: TimeInterval? = nil, iat: TimeInterval? = 0) -> TestClaims {
        TestClaims(
            exp: exp.map { self.now + $0 }, nbf: nbf.map { self.now + $0 }, iat: iat.map { self.now + $0 })
    }

    // MARK: Round trips

    @Test func es256RoundTrip() throws {
        let token = try self.signer.sign(self.claims())
        #expect(try self.verifier.verify(token, as: TestClaims.self, now: self.now) == self.claims())

        let segments = Forge.segments(token)
        let header = try JSONSerialization.jsonObject(with: Data(#require(Base64URL.decode(segments[0])))) as? [String: String]
        #expect(header == ["alg": "ES256", "typ": "JWT", "kid": self.signer.keyID])
        #expect(self.signer.keyID == self.signer.verificationKey.keyID)
        #expect(segments[2].count == 86)
        #expect(Base64URL.decode(segments[2])?.count == 64)
        let payload = try JSONSerialization.jsonObject(with: Data(#require(Base64URL.decode(segments[1])))) as? [String: Any]
        #expect(payload?["exp"] as? Double == 1_800_000_600, "dates are NumericDate seconds")
    }

    @Test func hs256RoundTripAndExplicitType() throws {
        let hsSigner = JWTSigner(key: try HS256Key.generate(), keyID: "session-1", type: "at+jwt")
        let hsVerifier = try JWTVerifier(
            keys: [hsSigner.verificationKey], issuers: ["https://guestpass.test"], audiences: ["api"], expectedType: "AT+JWT")
        let token = try hsSigner.sign(self.claims())
        #expect(try hsVerifier.verify(token, as: TestClaims.self, now: self.now) == self.claims())
        #expect(try hsVerifier.verify(token, now: self.now).header == JWTHeader(algorithm: .hs256, keyID: "session-1", type: "at+jwt"))
        let plainVerifier = try JWTVerifier(keys: [hsSigner.verificationKey], audiences: ["api"], expectedType: "JWT")
        #expect(throws: JWTError(.wrongType)) { try plainVerifier.verify(token, now: self.now) }
    }

    @Test func keyRotation() throws {
        let old = JWTSigner(key: try ES256PrivateKey.generate(), keyID: "2025-01")
        let new = JWTSigner(key: try ES256PrivateKey.generate(), keyID: "2025-02")
        let stranger = JWTSigner(key: try ES256PrivateKey.generate(), keyID: "2025-03")
        let impostor = JWTSigner(key: try ES256PrivateKey.generate(), keyID: "2025-01")
        let rotating = try JWTVerifier(keys: [old.verificationKey, new.verificationKey], audiences: ["api"])
        for signer in [old, new] {
            #expect(try rotating.verify(signer.sign(self.claims()), as: TestClaims.self, now: self.now).sub == "user-1")
        }
        #expect(throws: JWTError(.unknownKey)) { try rotating.verify(stranger.sign(self.claims()), now: self.now) }
        #expect(throws: JWTError(.badSignature)) { try rotating.verify(impostor.sign(self.claims()), now: self.now) }

        // Without a kid, two ES256 keys are ambiguous: rejected rather than tried in turn.
        let kidless = Forge.token(header: #"{"alg":"ES256"}"#, payload: #"{"aud":"api","exp":1800000600}"#) {
            try! new.signingKeyForTests.signature(for: $0).rawRepresentation
        }
        #expect(throws: JWTError(.unknownKey)) { try rotating.verify(kidless, now: self.now) }
        let single = try JWTVerifier(keys: [new.verificationKey], audiences: ["api"])
        #expect(try single.verify(kidless, now: self.now).header.keyID == nil)

        #expect(throws: JWTError(.duplicateKeyID)) { try JWTVerifier(keys: [old.verificationKey, impostor.verificationKey]) }
    }

    @Test func tamperedPayloadIsRejected() throws {
        let token = try self.signer.sign(self.claims())
        var other = self.claims()
        other.sub = "admin"
        let otherToken = try self.signer.sign(other)
        let spliced = [Forge.segments(token)[0], Forge.segments(otherToken)[1], Forge.segments(token)[2]].joined(separator: ".")
        #expect(throws: JWTError(.badSignature)) { try self.verifier.verify(spliced, now: self.now) }
    }

    // MARK: Time claims

    @Test func expirationWithLeeway() throws {
        #expect(throws: Never.self) { try self.verifier.verify(self.signer.sign(self.claims(exp: -29)), now: self.now) }
        #expect(throws: JWTError(.expired)) { try self.verifier.verify(self.signer.sign(self.claims(exp: -31)), now: self.now) }
        #expect(throws: JWTError(.missingClaim)) { try self.verifier.verify(self.signer.sign(self.claims(exp: nil)), now: self.now) }
        let strict = try JWTVerifier(keys: [self.signer.verificationKey], audiences: ["api"], leeway: 0)
        #expect(throws: JWTError(.expired)) { try strict.verify(self.signer.sign(self.claims(exp: 0)), now: self.now) }
        let lenient = try JWTVerifier(keys: [self.signer.verificationKey], audiences: ["api"], requiresExpiration: false)
        #expect(throws: Never.self) { try lenient.verify(self.signer.sign(self.claims(exp: nil)), now: self.now) }
    }

    @Test func notBeforeAndIssuedAt() throws {
        #expect(throws: Never.self) { try self.verifier.verify(self.signer.sign(self.claims(nbf: 29)), now: self.now) }
        #expect(throws: JWTError(.notYetValid)) { try self.verifier.verify(self.signer.sign(self.claims(nbf: 31)), now: self.now) }
        #expect(throws: Never.self) { try self.verifier.verify(self.signer.sign(self.claims(iat: 29)), now: self.now) }
        #expect(throws: JWTError(.issuedInFuture)) { try self.verifier.verify(self.signer.sign(self.claims(iat: 3600)), now: self.now) }
    }

    // MARK: Audience and issuer

    @Test func audience() throws {
        func token(_ audience: JWTAudience?) throws -> String {
            var claims = self.claims()
            claims.aud = audience
            return try self.signer.sign(claims)
        }
        #expect(throws: Never.self) { try self.verifier.verify(token(["web", "api"]), now: self.now) }
        #expect(throws: JWTError(.wrongAudience)) { try self.verifier.verify(token("web"), now: self.now) }
        #expect(throws: JWTError(.wrongAudience)) { try self.verifier.verify(token(["web", "admin"]), now: self.now) }
        #expect(throws: JWTError(.wrongAudience)) { try self.verifier.verify(token([]), now: self.now) }
        #expect(throws: JWTError(.missingClaim)) { try self.verifier.verify(token(nil), now: self.now) }
        let noAudience = try JWTVerifier(keys: [self.signer.verificationKey])
        #expect(throws: JWTError(.wrongAudience)) { try noAudience.verify(token("api"), now: self.now) }
        #expect(throws: Never.self) { try noAudience.verify(token(nil), now: self.now) }
    }

    @Test func issuer() throws {
        var claims = self.claims()
        claims.iss = "https://evil.test"
        #expect(throws: JWTError(.wrongIssuer)) { try self.verifier.verify(self.signer.sign(claims), now: self.now) }
        claims.iss = nil
        #expect(throws: JWTError(.missingClaim)) { try self.verifier.verify(self.signer.sign(claims), now: self.now) }
    }

    // MARK: Malformed input

    @Test func malformedTokensAreRejected() throws {
        let key = try HS256Key.generate()
        let verifier = try JWTVerifier(keys: [.hs256(key, keyID: "h")], requiresExpiration: false)
        let valid = Forge.hs256(payload: #"{"sub":"x"}"#, key: key)
        #expect(throws: Never.self) { try verifier.verify(valid, now: self.now) }

        let segments = Forge.segments(valid)
        let malformed = [
            "", ".", "..", "a.b", segments.prefix(2).joined(separator: "."), valid + ".", valid + "." + segments[2],
            segments[0] + "=." + segments[1] + "." + segments[2],
            segments[0] + "." + segments[1] + "=." + segments[2],
            " " + valid,
            String(repeating: "a", count: 9000) + "." + segments[1] + "." + segments[2],
            Forge.hs256(header: "[]", payload: "{}", key: key),
            Forge.hs256(header: #""HS256""#, payload: "{}", key: key),
            Forge.hs256(header: #"{"alg":"HS256","kid":"h","alg":"none"}"#, payload: "{}", key: key),
            Forge.hs256(header: #"{"alg":"HS256","kid":"h","\u0061lg":"HS256"}"#, payload: "{}", key: key),
            Forge.hs256(header: #"{"alg":"HS256","kid":"h"} x"#, payload: "{}", key: key),
            Forge.hs256(header: #"{"alg":"HS256","kid":7}"#, payload: "{}", key: key),
            Forge.hs256(header: #"{"alg":"HS256","kid":"h",}"#, payload: "{}", key: key),
            Forge.hs256(payload: "[1]", key: key),
            Forge.hs256(payload: "", key: key),
            Forge.hs256(payload: #"{"sub":"a","sub":"b"}"#, key: key),
            Forge.hs256(payload: #"{"x":{"a":1,"a":2}}"#, key: key),
            Forge.hs256(payload: #"{"sub":"a"}{"sub":"b"}"#, key: key),
            Forge.hs256(payload: #"{"sub":"\ud800"}"#, key: key),
            Forge.hs256(payload: #"{"n":01}"#, key: key),
            Forge.hs256(payload: String(repeating: "[", count: 40) + String(repeating: "]", count: 40), key: key),
        ]
        for token in malformed {
            #expect(throws: JWTError(.malformed), "\(token.prefix(60))") { try verifier.verify(token, now: self.now) }
        }
    }

    @Test func criticalHeadersAndInvalidClaims() throws {
        let key = try HS256Key.generate()
        let verifier = try JWTVerifier(keys: [.hs256(key, keyID: "h")], requiresExpiration: false)
        let critical = Forge.hs256(header: #"{"alg":"HS256","kid":"h","crit":["exp"]}"#, payload: "{}", key: key)
        #expect(throws: JWTError(.unsupportedHeader)) { try verifier.verify(critical, now: self.now) }
        for payload in [#"{"exp":"tomorrow"}"#, #"{"aud":5}"#, #"{"iss":["a"]}"#] {
            #expect(throws: JWTError(.invalidClaims)) { try verifier.verify(Forge.hs256(payload: payload, key: key), now: self.now) }
        }
        #expect(throws: JWTError(.invalidClaims)) {
            try verifier.verify(Forge.hs256(payload: #"{"iss":"x"}"#, key: key), as: TestClaims.self, now: self.now)
        }
        #expect(throws: JWTError(.invalidClaims)) { try self.signer.sign([1, 2, 3]) }
    }

    @Test func errorDescriptionsNeverIncludeTheToken() throws {
        let token = try self.signer.sign(self.claims(exp: -3600))
        do {
            _ = try self.verifier.verify(token, now: self.now)
            Issue.record("an expired token verified")
        } catch {
            let text = "\(error) \(String(reflecting: error))"
            #expect(text.contains("expired"))
            for segment in Forge.segments(token) { #expect(!text.contains(segment)) }
            #expect(!text.contains("user-1"))
        }
    }

    // MARK: JWKS

    @Test func jwkSetPublishesOnlyES256PublicKeys() throws {
        let secret = try HS256Key.generate()
        let apple = try RSAPublicKey(pemRepresentation: Fixtures.text("apple_W6WcOKB_pub.pem"))
        let set = JWKSet([self.signer.verificationKey, .hs256(secret, keyID: "session"), .rs256(apple, keyID: "W6WcOKB")])
        let json = try JSONSerialization.jsonObject(with: set.jsonData()) as? [String: [[String: String]]]
        let keys = try #require(json?["keys"])
        #expect(keys.count == 1)
        #expect(Set(keys[0].keys) == ["kty", "crv", "x", "y", "use", "alg", "kid"])
        #expect(keys[0]["kid"] == self.signer.keyID)
        #expect(try ES256PublicKey(jwk: keys[0]).thumbprint == self.signer.keyID)
        let text = String(decoding: try set.jsonData(), as: UTF8.self)
        #expect(!text.contains(Base64URL.encode(secret.withUnsafeSecret { $0 })))
        #expect(text.hasPrefix(#"{"keys":[{"alg":"ES256","crv":"P-256","kid":""#))
    }
}

extension JWTSigner {
    /// The ES256 private key, for forging kid-less tokens in tests.
    var signingKeyForTests: ES256PrivateKey {
        guard case .es256(let key) = self.signingKey else { fatalError("not an ES256 signer") }
        return key
    }
}
