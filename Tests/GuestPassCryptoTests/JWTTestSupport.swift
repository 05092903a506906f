import Foundation

@testable import GuestPassCrypto

/// Claims used by the JWT tests.
struct TestClaims: Codable, Equatable {
    var sub: String = "user-1"
    var iss: String? = "https://guestpass.test"
    var aud: JWTAudience? = "api"
    var exp: Date?
    var nbf: Date?
    var iat: Date?
}

/// The RFC 7515 A.1/A.3 payload: note the `\r\n` inside the JSON, which must never be re-serialized.
struct RFCClaims: Decodable, Equatable {
    let iss: String
    let exp: Date
    let isRoot: Bool

    enum CodingKeys: String, CodingKey {
        case iss, exp
        case isRoot = "http://example.com/is_root"
    }
}

enum Forge {
    /// Builds `b64(header).b64(payload).b64(signature)` from literal JSON, signing with `sign`.
    static func token(header: String, payload: String, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }

    /// An HS256 token over literal JSON with a valid MAC, so that only the JSON itself can cause a rejection.
    static func hs256(header: String = #"{"alg":"HS256","kid":"h"}"#, payload: String, key: HS256Key) -> String {
        Self.token(header: header, payload: payload) { key.authenticationCode(for: $0) }
    }

    /// The token's segments.
    static func segments(_ token: String) -> [String] {
        token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }
}
