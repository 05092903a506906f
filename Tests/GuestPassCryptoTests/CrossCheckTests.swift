import Foundation
import Testing

@testable import GuestPassCrypto

private let crossCheckDirectory = ProcessInfo.processInfo.environment["GUESTPASS_CROSSCHECK_DIR"].map {
    URL(fileURLWithPath: $0)
}

/// Interoperability with an independent JWT library, driven by `crosscheck.py` (PyJWT).
///
/// Disabled unless `GUESTPASS_CROSSCHECK_DIR` is set. The script first writes PyJWT-signed tokens into that
/// directory, this test verifies them and writes tokens of its own, then the script verifies those with PyJWT.
@Suite(.enabled(if: crossCheckDirectory != nil, "set GUESTPASS_CROSSCHECK_DIR (see crosscheck.py)"))
struct CrossCheckTests {

    struct Claims: Codable, Equatable {
        let sub: String
        let iss: String
        let aud: JWTAudience
        let exp: Date
        let iat: Date
    }

    private func read(_ name: String) throws -> String {
        let url = try #require(crossCheckDirectory).appendingPathComponent(name)
        return String(decoding: try Data(contentsOf: url), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func write(_ text: String, to name: String) throws {
        try Data(text.utf8).write(to: try #require(crossCheckDirectory).appendingPathComponent(name))
    }

    @Test func verifiesPyJWTTokensAndWritesOurs() throws {
        let secret = try HS256Key(secret: [UInt8](hex: self.read("hs256_secret.hex")))
        let pythonKey = try ES256PublicKey(pemRepresentation: self.read("python_es256_pub.pem") + "\n")
        let verifier = try JWTVerifier(
            keys: [.es256(pythonKey, keyID: "py-es"), .hs256(secret, keyID: "py-hs")],
            issuers: ["crosscheck"], audiences: ["api"])
        for name in ["python_es256.jwt", "python_hs256.jwt"] {
            let claims = try verifier.verify(self.read(name), as: Claims.self)
            #expect(claims.sub == "from-python", "\(name)")
        }

        let now = Date()
        let claims = Claims(
            sub: "from-swift", iss: "crosscheck", aud: "api", exp: now + 600,
            iat: Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down)))
        let esSigner = JWTSigner(key: try ES256PrivateKey.generate())
        try self.write(esSigner.sign(claims), to: "swift_es256.jwt")
        try self.write(esSigner.verificationKey.keyID, to: "swift_es256.kid")
        try self.write(esSigner.signingKeyForTests.publicKey.pemRepresentation, to: "swift_es256_pub.pem")
        try self.write(String(decoding: JWKSet([esSigner.verificationKey]).jsonData(), as: UTF8.self), to: "swift_jwks.json")
        try self.write(JWTSigner(key: secret, keyID: "swift-hs").sign(claims), to: "swift_hs256.jwt")
    }
}
