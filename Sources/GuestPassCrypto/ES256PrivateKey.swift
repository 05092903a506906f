import COpenSSL

/// A P-256 private key for ES256 signing: ours for JWTs, or Apple's `.p8` for DeviceCheck / Sign in with Apple.
///
/// Its `description` never shows the key.
public struct ES256PrivateKey: Sendable, CustomStringConvertible {
    let key: EVPKey
    /// The matching public key.
    public let publicKey: ES256PublicKey

    /// Wraps `key` after checking it is P-256 (internal: tests build a public-only key with it).
    init(validating key: EVPKey) throws {
        try ES256PublicKey.requireP256(key)
        self.key = key
        self.publicKey = try ES256PublicKey(
            x: key.bignumParameter("qx", width: 32), y: key.bignumParameter("qy", width: 32))
    }

    /// Generates a new random P-256 key.
    public static func generate() throws -> ES256PrivateKey {
        try ES256PrivateKey(validating: EVPKey.generate(type: "EC", group: "P-256"))
    }

    /// Loads an unencrypted PEM private key: PKCS#8 `PRIVATE KEY` (which Apple's `.p8` files are) or SEC1
    /// `EC PRIVATE KEY`.
    ///
    /// - Throws: `OpenSSLError` if the PEM does not parse (encrypted keys included); `CryptoError.wrongKeyType` /
    ///   `.unsupportedCurve` if it is not a P-256 EC key.
    public init(pemRepresentation pem: String) throws {
        try self.init(validating: EVPKey.fromPrivateKeyPEM(pem))
    }

    /// The key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). Handle as a secret.
    public var pkcs8PEMRepresentation: String {
        get throws { try self.key.privateKeyPKCS8PEM() }
    }

    /// Signs `message` with ECDSA P-256 / SHA-256, returning the JOSE `R ‖ S` form.
    ///
    /// ECDSA is randomized: two signatures of the same message differ, and both verify.
    public func signature(for message: some Collection<UInt8>) throws -> ES256Signature {
        try ES256Signature(derRepresentation: self.key.signSHA256(Array(message)))
    }

    public var description: String { "ES256PrivateKey(public: \(self.publicKey.thumbprint))" }
}
