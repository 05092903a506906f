import Foundation

/// The JWS algorithms this module implements (RFC 7518 §3.1). `none` is deliberately absent.
public enum JWTAlgorithm: String, Hashable, Sendable, CaseIterable {
    /// ECDSA P-256 with SHA-256: our own tokens, Apple DeviceCheck / client-secret JWTs.
    case es256 = "ES256"
    /// HMAC-SHA256 with a shared secret.
    case hs256 = "HS256"
    /// RSASSA-PKCS1-v1_5 with SHA-256: verification of Sign in with Apple id tokens.
    case rs256 = "RS256"
}

/// The protected header of a verified JWT.
public struct JWTHeader: Hashable, Sendable {
    /// `alg`, which equals the algorithm of the key that verified the token.
    public let algorithm: JWTAlgorithm
    /// `kid`, if present.
    public let keyID: String?
    /// `typ`, if present.
    public let type: String?
}

/// A token whose signature and registered claims have been verified.
public struct VerifiedJWT: Sendable {
    /// The decoded protected header.
    public let header: JWTHeader
    /// The payload JSON exactly as received (decoded from base64url, never re-serialized).
    public let payload: Data
}

/// The `aud` claim: one string or an array of strings (RFC 7519 §4.1.3).
///
/// Encodes a single audience as a plain string, several as an array.
public struct JWTAudience: Codable, Hashable, Sendable, ExpressibleByStringLiteral, ExpressibleByArrayLiteral {
    /// The audience values, in token order.
    public let values: [String]

    public init(_ values: [String]) {
        self.values = values
    }

    public init(stringLiteral value: String) {
        self.values = [value]
    }

    public init(arrayLiteral elements: String...) {
        self.values = elements
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let single = try? container.decode(String.self) {
            self.values = [single]
        } else {
            self.values = try container.decode([String].self)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if self.values.count == 1 {
            try container.encode(self.values[0])
        } else {
            try container.encode(self.values)
        }
    }
}
