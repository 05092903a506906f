import COpenSSL

/// An RSA private key that signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256).
///
/// GuestPass's own tokens are ES256 or HS256; RSA signing exists for the Apple stand-in, which issues identity tokens
/// the way Apple does. Keys are at least `RSAPublicKey.minimumModulusBits` bits.
public struct RSAPrivateKey: Sendable {
    let key: EVPKey

    private init(validating key: EVPKey) throws {
        guard key.baseID == EVP_PKEY_RSA else { throw CryptoError.wrongKeyType }
        guard key.bits >= RSAPublicKey.minimumModulusBits else { throw CryptoError.keyTooSmall }
        self.key = key
    }

    /// Generates a fresh key of `bits` bits (default 2048, as Apple's).
    public static func generate(bits: Int = 2048) throws -> RSAPrivateKey {
        try RSAPrivateKey(validating: EVPKey.generateRSA(bits: bits))
    }

    /// Loads a PEM private key (PKCS#8 or PKCS#1) holding an RSA key.
    public init(pemRepresentation pem: String) throws {
        try self.init(validating: EVPKey.fromPrivateKeyPEM(pem))
    }

    /// The key as unencrypted PKCS#8 PEM.
    public var pkcs8PEMRepresentation: String {
        get throws { try self.key.privateKeyPKCS8PEM() }
    }

    /// The public half.
    public var publicKey: RSAPublicKey {
        get throws { try RSAPublicKey(pemRepresentation: try self.key.publicKeyPEM()) }
    }

    /// The RS256 signature of `message` (as long as the modulus).
    public func signature(for message: some Collection<UInt8>) throws -> [UInt8] {
        try self.key.signSHA256(Array(message))
    }
}
