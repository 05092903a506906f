public import Foundation

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
