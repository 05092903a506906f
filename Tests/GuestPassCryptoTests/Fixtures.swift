import Foundation
import Testing

@testable import GuestPassCrypto

/// The files under `Vectors/` (RFC 7515 A.3, a real Apple RS256 signature) and the literal RFC values.
enum Fixtures {
    static func bytes(_ name: String) throws -> [UInt8] {
        let directory = try #require(Bundle.module.resourceURL).appendingPathComponent("Vectors")
        return Array(try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    static func text(_ name: String) throws -> String {
        String(decoding: try Self.bytes(name), as: UTF8.self)
    }

    // MARK: RFC 7515 A.1 (HS256)

    static let a1Key = "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"
    static let a1Token =
        "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    static let a1MACHex = "7418dfb49799e0254ffa607dd8adbbba16d4254d69d6bff05b58055853848d79"
    /// The payload shared by the A.1/A.3 examples and the negative vectors (`exp` 1300819380).
    static let rfcPayloadSegment =
        "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
    /// A moment inside the RFC examples' validity (`exp` is 1300819380).
    static let rfcNow = Date(timeIntervalSince1970: 1_300_819_000)

    // MARK: RFC 7515 A.3 (ES256)

    static let a3X = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
    static let a3Y = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
    static let a3SignatureSegment =
        "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
    static let a3Token = "eyJhbGciOiJFUzI1NiJ9." + rfcPayloadSegment + "." + a3SignatureSegment
    /// The A.3 key as SEC1 `EC PRIVATE KEY`, converted from a3_priv_pkcs8.pem with python3 `cryptography`.
    static let a3SEC1PEM = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEII6bEJ5xkJi/mASH3x9dd+nLKWBuvtImO19XwhPfhPSyoAoGCCqGSM49
        AwEHoUQDQgAEf83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEXH8UTNG72b
        focs3+257rn0s2ldbqkLJK2KRiMohYjlrQ==
        -----END EC PRIVATE KEY-----

        """
    /// RFC 7638 thumbprint of the A.3 public key, computed independently with python3 (`cryptography` for the
    /// coordinates, `json.dumps(sort_keys=True, separators=(",",":"))` and `hashlib.sha256`), not by this module.
    static let a3Thumbprint = "oKIywvGUpTVTyxMQ3bwIIeQUudfr_CkLMjCE19ECD-U"

    // MARK: Other keys

    /// A P-384 key (generated with python3 `cryptography`): valid EC, wrong curve for ES256.
    static let p384PrivatePEM = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDOsz6ZNtdIkQGRP18T
        FS4u0ouO7FGRev9/neY04ueIz3aulX9c93IlxMPeE9ls+DChZANiAARtScHLpYNX
        F/GC42urQYuKoYY/6b1kfn/Qg9BXoZIaAH2WKMWkgrptC7macHveCi3d5LuRKbds
        qNVDijem1zKYKv/eZgL0llxwVwSeSvs9KcIxdyLd8EGqAPEpgqPHZ2w=
        -----END PRIVATE KEY-----

        """
    static let p384PublicPEM = """
        -----BEGIN PUBLIC KEY-----
        MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEbUnBy6WDVxfxguNrq0GLiqGGP+m9ZH5/
        0IPQV6GSGgB9lijFpIK6bQu5mnB73got3eS7kSm3bKjVQ4o3ptcymCr/3mYC9JZc
        cFcEnkr7PSnCMXci3fBBqgDxKYKjx2ds
        -----END PUBLIC KEY-----

        """

    // MARK: Apple (RS256, kid W6WcOKB)

    static let appleModulus =
        "2Zc5d0-zkZ5AKmtYTvxHc3vRc41YfbklflxG9SWsg5qXUxvfgpktGAcxXLFAd9Uglzow9ezvmTGce5d3DhAYKwHAEPT9hbaMDj7DfmEwuNO8Uah"
        + "fnBkBXsCoUaL3QITF5_DAPsZroTqs7tkQQZ7qPkQXCSu2aosgOJmaoKQgwcOdjD0D49ne2B_dkxBcNCcJT9pTSWJ8NfGycjWAQsvC8CGstH8o"
        + "KwhC5raDcc2IGXMOQC7Qr75d6J5Q24CePHj_JD7zjbwYy9KNH8wyr829eO_G4OEUW50FAN6HKtvjhJIguMl_1BLZ93z2KJyxExiNTZBUBQbbg"
        + "CNBfzTv7JrxMw"
    static let appleNow = Date(timeIntervalSince1970: 1_689_600_000)

    /// RFC 7638 §3.1 example RSA key (from RFC 7517 A.1) and its thumbprint as printed in RFC 7638.
    static let rfc7638Modulus =
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3"
        + "oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZ"
        + "Hzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kE"
        + "gU8awapJzKnqDKgw"
    static let rfc7638Thumbprint = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"

    static func a3PublicKey() throws -> ES256PublicKey {
        try ES256PublicKey(pemRepresentation: Self.text("a3_pub.pem"))
    }

    static func appleToken() throws -> String {
        try Self.text("apple_input.txt") + "." + Base64URL.encode(Self.bytes("apple_sig.bin"))
    }
}

extension Array where Element == UInt8 {
    init(hex: String) {
        let digits = Array(hex.utf8)
        self = stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }
}
