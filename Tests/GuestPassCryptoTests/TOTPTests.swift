import Foundation
import Testing

@testable import GuestPassCrypto

/// TOTP (RFC 6238) against the RFC's own vectors, Base32 (RFC 4648) against its, and the verification window.
@Suite struct TOTPTests {
    /// RFC 6238 appendix B, the SHA-1 rows: the ASCII key "12345678901234567890", 8 digits.
    @Test(arguments: [
        (59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"), (1_234_567_890, "89005924"),
        (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
    ])
    func rfc6238Vectors(seconds: Int64, expected: String) {
        let key = Array("12345678901234567890".utf8)
        #expect(TOTP.code(secret: key, counter: UInt64(seconds / 30), digits: 8) == expected)
    }

    /// RFC 4226 appendix D: the HOTP values of counters 0...9 (6 digits).
    @Test func rfc4226Vectors() {
        let key = Array("12345678901234567890".utf8)
        let expected = ["755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489"]
        #expect((0..<10).map { TOTP.code(secret: key, counter: UInt64($0)) } == expected)
    }

    /// RFC 4648 section 10, the base32 rows (padding dropped on output, accepted on input, either case).
    @Test func base32Vectors() {
        let vectors = [("", ""), ("f", "MY"), ("fo", "MZXQ"), ("foo", "MZXW6"), ("foob", "MZXW6YQ"), ("fooba", "MZXW6YTB"), ("foobar", "MZXW6YTBOI")]
        for (plain, encoded) in vectors {
            #expect(Base32.encode(Array(plain.utf8)) == encoded)
            #expect(Base32.decode(encoded) == Array(plain.utf8))
            #expect(Base32.decode(encoded.lowercased()) == Array(plain.utf8))
        }
        #expect(Base32.decode("MZXW6===") == Array("foo".utf8))
        #expect(Base32.decode("MZ1W6") == nil)
    }

    @Test func theStepEitherSideIsAcceptedAndTwoStepsAreNot() throws {
        let secret = try TOTP.newSecret()
        let now = Date(timeIntervalSince1970: 1_800_000_015)
        #expect(TOTP.verify(TOTP.code(secret: secret, at: now), secret: secret, at: now))
        #expect(TOTP.verify(TOTP.code(secret: secret, at: now.addingTimeInterval(-30)), secret: secret, at: now))
        #expect(TOTP.verify(TOTP.code(secret: secret, at: now.addingTimeInterval(30)), secret: secret, at: now))
        #expect(!TOTP.verify(TOTP.code(secret: secret, at: now.addingTimeInterval(-60)), secret: secret, at: now))
        #expect(!TOTP.verify(TOTP.code(secret: secret, at: now.addingTimeInterval(60)), secret: secret, at: now))
        #expect(!TOTP.verify(TOTP.code(secret: try TOTP.newSecret(), at: now), secret: secret, at: now))
        #expect(!TOTP.verify("12345", secret: secret, at: now))
        #expect(!TOTP.verify("abcdef", secret: secret, at: now))
        #expect(!TOTP.verify("", secret: secret, at: now))
        let step = UInt64(1_800_000_015 / 30)
        #expect(TOTP.matchingStep(TOTP.code(secret: secret, at: now.addingTimeInterval(-30)), secret: secret, at: now) == step - 1)
        #expect(TOTP.matchingStep(TOTP.code(secret: secret, at: now), secret: secret, at: now) == step)
    }

    @Test func theURIHoldsTheSecretInBase32() throws {
        let secret = try TOTP.newSecret()
        let uri = TOTP.otpauthURI(secret: secret, account: "ops@example.com", issuer: "GuestPass")
        #expect(uri.hasPrefix("otpauth://totp/GuestPass:ops@example.com?secret="))
        let query = try #require(URLComponents(string: uri)?.queryItems)
        #expect(query.first { $0.name == "secret" }?.value.flatMap(Base32.decode) == secret)
        #expect(query.first { $0.name == "issuer" }?.value == "GuestPass")
    }

    /// The same appendix B rows through the clock: the 6-digit code at each time is the vector's last six digits, and
    /// `verify` accepts it then, 30 s later (the step before), not 60 s later.
    @Test func rfc6238VectorsByDate() {
        let key = Array("12345678901234567890".utf8)
        let vectors: [(TimeInterval, String)] = [
            (59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"), (1_234_567_890, "89005924"),
            (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
        ]
        for (seconds, expected) in vectors {
            let date = Date(timeIntervalSince1970: seconds)
            let code = String(expected.suffix(6))
            #expect(TOTP.code(secret: key, at: date) == code, "T = \(seconds)")
            #expect(TOTP.verify(code, secret: key, at: date) && TOTP.verify(code, secret: key, at: date.addingTimeInterval(30)))
            #expect(!TOTP.verify(code, secret: key, at: date.addingTimeInterval(60)))
        }
    }

    /// A secret survives its trip through the otpauth URI's base32, whatever its bytes.
    @Test func base32RoundTripsEveryLength() throws {
        for length in 0...40 {
            let bytes = try SecureRandom.bytes(length)
            let text = Base32.encode(bytes)
            #expect(!text.contains("=") && text.count == (length * 8 + 4) / 5)
            #expect(Base32.decode(text) == bytes && Base32.decode(text.lowercased()) == bytes)
        }
        #expect(try TOTP.newSecret().count == 20)
    }
}
