import COpenSSL

/// An RSA public key for verifying RS256 (RSASSA-PKCS1-v1_5 with SHA-256) signatures, such as the keys in
/// Apple's Sign in with Apple JWKS.
///
/// Only verification is offered. Moduli under 2048 bits are refused, and libcrypto's public-key check rejects
/// unusable exponents (e = 1, even e).
public struct RSAPublicKey: Sendable {
    /// The smallest accepted modulus size.
    public static let minimumModulusBits = 2048

    let key: EVPKey

    private init(validating key: EVPKey) throws {
        guard key.baseID == EVP_PKEY_RSA else { throw CryptoError.wrongKeyType }
        guard key.bits >= Self.minimumModulusBits else { throw CryptoError.keyTooSmall }
        try key.checkPublicKey()
        self.key = key
    }

    /// Loads a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) holding an RSA key.
    public init(pemRepresentation pem: String) throws {
        try self.init(validating: EVPKey.fromPublicKeyPEM(pem))
    }

    /// Builds the key from a JWK's base64url `n` (modulus) and `e` (exponent).
    public init(jwkModulus n: String, exponent e: String) throws {
        guard let modulus = Base64URL.decode(n), let exponent = Base64URL.decode(e), !modulus.isEmpty,
            !exponent.isEmpty, modulus.count <= 2048, exponent.count <= 8
        else { throw CryptoError.invalidJWK }
        let key: EVPKey
        do {
            key = try EVPKey.fromSubjectPublicKeyInfo(DER.rsaSubjectPublicKeyInfo(modulus: modulus, exponent: exponent))
        } catch is OpenSSLError {
            throw CryptoError.invalidKey
        }
        try self.init(validating: key)
    }

    /// Builds the key from a JWK object's string members.
    ///
    /// Requires `kty` `RSA`, `n` and `e`; `alg`, if present, must be `RS256` and `use`, if present, `sig`.
    public init(jwk: [String: String]) throws {
        guard jwk["kty"] == "RSA", let n = jwk["n"], let e = jwk["e"],
            jwk["alg"].map({ $0 == "RS256" }) ?? true, jwk["use"].map({ $0 == "sig" }) ?? true
        else { throw CryptoError.invalidJWK }
        try self.init(jwkModulus: n, exponent: e)
    }

    /// The modulus size in bits.
    public var modulusBits: Int { self.key.bits }

    /// The modulus and exponent as minimal big-endian bytes.
    public var components: (modulus: [UInt8], exponent: [UInt8]) {
        get throws { (try self.key.bignumParameter("n"), try self.key.bignumParameter("e")) }
    }

    /// The RFC 7638 JWK thumbprint: base64url SHA-256 of `{"e":"…","kty":"RSA","n":"…"}`.
    public var thumbprint: String {
        get throws {
            let (modulus, exponent) = try self.components
            let canonical = #"{"e":"\#(Base64URL.encode(exponent))","kty":"RSA","n":"\#(Base64URL.encode(modulus))"}"#
            return Base64URL.encode(Digest.sha256(Array(canonical.utf8)))
        }
    }

    /// Whether `signature` is a valid RS256 signature of `message`.
    ///
    /// The signature must be exactly as long as the modulus (RFC 8017 §8.2.2 step 1).
    public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        let signature = Array(signature)
        guard signature.count == self.key.maximumSignatureSize else { return false }
        return self.key.verifySHA256(signature: signature, message: Array(message))
    }
}
