import Foundation
import Testing

@testable import GuestPassCrypto

@Suite struct ES256Tests {
    // MARK: Signature conversion (RFC 7515 A.3)

    @Test func derToRawMatchesTheRFCValue() throws {
        let der = try Fixtures.bytes("a3_sig.der")
        #expect(der.count == 71)
        let signature = try ES256Signature(derRepresentation: der)
        #expect(signature.rawRepresentation == Base64URL.decode(Fixtures.a3SignatureSegment))
        #expect(try signature.derRepresentation == der)
    }

    @Test func rawToDERLeftPadsAndRoundTrips() throws {
        // r with leading zero bytes and s with the high bit set: DER drops the zeros and pads s with 0x00.
        let raw = [UInt8](repeating: 0, count: 3) + [UInt8](repeating: 0x11, count: 29) + [UInt8](repeating: 0xF0, count: 32)
        let der = try ES256Signature(rawRepresentation: raw).derRepresentation
        #expect(der[0...3] == [0x30, 0x42, 0x02, 0x1D])
        #expect(try ES256Signature(derRepresentation: der).rawRepresentation == raw)
    }

    @Test func rejectsBadSignatureEncodings() throws {
        let der = try Fixtures.bytes("a3_sig.der")
        #expect(throws: CryptoError.invalidSignatureEncoding) { try ES256Signature(derRepresentation: der + [0]) }
        #expect(throws: CryptoError.invalidSignatureEncoding) { try ES256Signature(derRepresentation: der.dropLast()) }
        // r re-encoded with a superfluous leading zero: BER-ish, not canonical DER.
        let nonCanonical = [0x30, 0x46, 0x02, 0x21, 0x00] + der[4...]
        #expect(throws: CryptoError.invalidSignatureEncoding) { try ES256Signature(derRepresentation: nonCanonical) }
        #expect(throws: CryptoError.invalidSignatureEncoding) { try ES256Signature(rawRepresentation: der) }
    }

    @Test func rfcSignatureVerifiesAndTamperingFails() throws {
        let key = try Fixtures.a3PublicKey()
        let input = try Fixtures.bytes("a3_input.txt")
        let raw = try ES256Signature(derRepresentation: Fixtures.bytes("a3_sig.der")).rawRepresentation
        #expect(key.isValidSignature(raw: raw, for: input))
        var flipped = raw
        flipped[40] ^= 0x01
        #expect(!key.isValidSignature(raw: flipped, for: input))
        #expect(!key.isValidSignature(raw: raw, for: input + [0x41]))
        #expect(!key.isValidSignature(raw: try Fixtures.bytes("a3_sig.der"), for: input), "DER must not verify")
        #expect(!key.isValidSignature(raw: [UInt8](repeating: 0, count: 64), for: input), "r = s = 0")
    }

    // MARK: Keys

    @Test func loadsPKCS8AndSEC1PrivateKeys() throws {
        let pkcs8 = try ES256PrivateKey(pemRepresentation: Fixtures.text("a3_priv_pkcs8.pem"))
        let sec1 = try ES256PrivateKey(pemRepresentation: Fixtures.a3SEC1PEM)
        for key in [pkcs8, sec1] {
            #expect(Base64URL.encode(key.publicKey.x) == Fixtures.a3X)
            #expect(Base64URL.encode(key.publicKey.y) == Fixtures.a3Y)
        }
        let exported = try sec1.pkcs8PEMRepresentation
        #expect(exported.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(try ES256PrivateKey(pemRepresentation: exported).publicKey.x == pkcs8.publicKey.x)
        #expect(!"\(pkcs8)".contains("PRIVATE"))
    }

    @Test func signsWithTheRFCKey() throws {
        let key = try ES256PrivateKey(pemRepresentation: Fixtures.text("a3_priv_pkcs8.pem"))
        let input = try Fixtures.bytes("a3_input.txt")
        let signature = try key.signature(for: input)
        #expect(signature.rawRepresentation.count == 64)
        #expect(try Fixtures.a3PublicKey().isValidSignature(signature, for: input))
    }

    @Test func generatedKeysSignAndVerifyRepeatedly() throws {
        // 1000 rounds: about 1 in 128 signatures has an r or s with a leading zero byte (which must stay 32 bytes),
        // so a missing left-pad goes unnoticed with probability (127/128)^1000 < 0.1%.
        let key = try ES256PrivateKey.generate()
        let publicKey = try ES256PublicKey(pemRepresentation: key.publicKey.pemRepresentation)
        for round in 0..<1000 {
            let message = Array("message \(round)".utf8)
            let signature = try key.signature(for: message)
            #expect(publicKey.isValidSignature(raw: signature.rawRepresentation, for: message))
        }
    }

    @Test func rejectsOtherCurvesAndKeyTypes() throws {
        #expect(throws: CryptoError.unsupportedCurve) { try ES256PrivateKey(pemRepresentation: Fixtures.p384PrivatePEM) }
        #expect(throws: CryptoError.unsupportedCurve) { try ES256PublicKey(pemRepresentation: Fixtures.p384PublicPEM) }
        #expect(throws: CryptoError.wrongKeyType) { try ES256PublicKey(pemRepresentation: Fixtures.text("apple_W6WcOKB_pub.pem")) }
        #expect(throws: (any Error).self) { try ES256PrivateKey(pemRepresentation: Fixtures.text("a3_pub.pem")) }
    }

    @Test func jwkRoundTripAndValidation() throws {
        let key = try Fixtures.a3PublicKey()
        let jwk = key.jwk()
        #expect(
            jwk == [
                "kty": "EC", "crv": "P-256", "x": Fixtures.a3X, "y": Fixtures.a3Y, "use": "sig", "alg": "ES256",
                "kid": Fixtures.a3Thumbprint,
            ])
        #expect(try ES256PublicKey(jwk: jwk).x == key.x)
        #expect(key.jwk(keyID: "k1")["kid"] == "k1")

        var wrongCurve = jwk
        wrongCurve["crv"] = "P-384"
        #expect(throws: CryptoError.invalidJWK) { try ES256PublicKey(jwk: wrongCurve) }
        var wrongAlgorithm = jwk
        wrongAlgorithm["alg"] = "HS256"
        #expect(throws: CryptoError.invalidJWK) { try ES256PublicKey(jwk: wrongAlgorithm) }
        var offCurve = try #require(Base64URL.decode(Fixtures.a3Y))
        offCurve[31] ^= 1
        #expect(throws: CryptoError.invalidKey) { try ES256PublicKey(x: key.x, y: offCurve) }
    }

    @Test func thumbprintMatchesIndependentComputation() throws {
        #expect(try Fixtures.a3PublicKey().thumbprint == Fixtures.a3Thumbprint)
    }
}

/// A key derived from the signing key fails closed: nothing public stands in for the private key.
@Suite struct DerivedKeyTests {
    @Test func derivationNeedsThePrivateKey() throws {
        let key = try ES256PrivateKey.generate()
        let signer = JWTSigner(key: key)
        #expect(try signer.derivedKey(label: "x") == (try signer.derivedKey(label: "x")))
        #expect(try signer.derivedKey(label: "x") != (try JWTSigner(key: try ES256PrivateKey.generate()).derivedKey(label: "x")))

        // A key object holding only the public half (as if export failed): derivation throws instead of using the kid.
        let publicOnly = try ES256PrivateKey(validating: EVPKey.fromPublicKeyPEM(try key.publicKey.pemRepresentation))
        #expect(throws: (any Error).self) { try JWTSigner(key: publicOnly).derivedKey(label: "guestpass refresh-token key v1") }
    }
}
