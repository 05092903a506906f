/// A key, signature or encoding that this module refuses to load or use.
///
/// Descriptions name the problem only; they never include the rejected bytes.
public struct CryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    private let name: String
    private init(_ name: String) { self.name = name }
    public var description: String { "CryptoError(\(self.name))" }

    /// The input is not valid PEM, DER, base64url or JSON of the expected shape.
    public static let invalidEncoding = CryptoError("invalidEncoding")
    /// The key is of another type than required (for example RSA where an EC key is expected).
    public static let wrongKeyType = CryptoError("wrongKeyType")
    /// The EC key is not on the P-256 curve.
    public static let unsupportedCurve = CryptoError("unsupportedCurve")
    /// The key is too short: RSA moduli must have at least 2048 bits, HMAC secrets at least 32 bytes.
    public static let keyTooSmall = CryptoError("keyTooSmall")
    /// A JWK is missing a member or has a `kty`, `crv` or `alg` that does not fit the key type.
    public static let invalidJWK = CryptoError("invalidJWK")
    /// An ECDSA signature is not 64 raw bytes, or not a canonical DER `ECDSA-Sig-Value`.
    public static let invalidSignatureEncoding = CryptoError("invalidSignatureEncoding")
    /// libcrypto rejected the key's public part (`EVP_PKEY_public_check`), e.g. a point not on the curve.
    public static let invalidKey = CryptoError("invalidKey")
}
