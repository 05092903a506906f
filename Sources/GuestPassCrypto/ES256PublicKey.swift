import COpenSSL

/// A P-256 public key for verifying ES256 (ECDSA with SHA-256) signatures.
public struct ES256PublicKey: Sendable {
    let key: EVPKey
    /// The affine x coordinate, 32 bytes big-endian.
    public let x: [UInt8]
    /// The affine y coordinate, 32 bytes big-endian.
    public let y: [UInt8]

    /// Wraps an already parsed key after checking that it is a valid EC key on P-256.
    init(validating key: EVPKey) throws {
        try Self.requireP256(key)
        try key.checkPublicKey()
        self.key = key
        self.x = try key.bignumParameter("qx", width: 32)
        self.y = try key.bignumParameter("qy", width: 32)
    }

    /// Loads a PEM `PUBLIC KEY` (SubjectPublicKeyInfo).
    ///
    /// - Throws: `OpenSSLError` if the PEM does not parse; `CryptoError.wrongKeyType` / `.unsupportedCurve`
    ///   if it is not a P-256 EC key.
    public init(pemRepresentation pem: String) throws {
        try self.init(validating: EVPKey.fromPublicKeyPEM(pem))
    }

    /// Builds the key from its raw affine coordinates (32 bytes each).
    ///
    /// - Throws: `CryptoError.invalidKey` if the point is not on the curve.
    public init(x: some Collection<UInt8>, y: some Collection<UInt8>) throws {
        let x = Array(x)
        let y = Array(y)
        guard x.count == 32, y.count == 32 else { throw CryptoError.invalidKey }
        let key: EVPKey
        do {
            key = try EVPKey.fromSubjectPublicKeyInfo(DER.p256SubjectPublicKeyInfo(x: x, y: y))
        } catch is OpenSSLError {
            throw CryptoError.invalidKey  // d2i_PUBKEY rejects points that are not on the curve
        }
        try self.init(validating: key)
    }

    /// Builds the key from a JWK's base64url `x` and `y` members.
    public init(jwkX x: String, y: String) throws {
        guard let xBytes = Base64URL.decode(x), let yBytes = Base64URL.decode(y) else { throw CryptoError.invalidJWK }
        try self.init(x: xBytes, y: yBytes)
    }

    /// Builds the key from a JWK object's string members.
    ///
    /// Requires `kty` `EC`, `crv` `P-256`, and `x`/`y`; `alg`, if present, must be `ES256` and `use`, if present,
    /// `sig`. Private members (`d`) are ignored.
    public init(jwk: [String: String]) throws {
        guard jwk["kty"] == "EC", jwk["crv"] == "P-256", let x = jwk["x"], let y = jwk["y"],
            jwk["alg"].map({ $0 == "ES256" }) ?? true, jwk["use"].map({ $0 == "sig" }) ?? true
        else { throw CryptoError.invalidJWK }
        try self.init(jwkX: x, y: y)
    }

    static func requireP256(_ key: EVPKey) throws {
        guard key.baseID == EVP_PKEY_EC else { throw CryptoError.wrongKeyType }
        guard key.groupName == "prime256v1" else { throw CryptoError.unsupportedCurve }
    }

    // MARK: Export

    /// The key as PEM `SubjectPublicKeyInfo`.
    public var pemRepresentation: String {
        get throws { try self.key.publicKeyPEM() }
    }

    /// The RFC 7638 JWK thumbprint: base64url SHA-256 of `{"crv":"P-256","kty":"EC","x":"…","y":"…"}`.
    public var thumbprint: String {
        let x = Base64URL.encode(self.x)
        let y = Base64URL.encode(self.y)
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        return Base64URL.encode(Digest.sha256(Array(canonical.utf8)))
    }

    /// The public JWK: `kty` `EC`, `crv` `P-256`, `x`, `y`, `use` `sig`, `alg` `ES256`, `kid`.
    ///
    /// - Parameter keyID: the `kid`; defaults to `thumbprint`.
    public func jwk(keyID: String? = nil) -> [String: String] {
        [
            "kty": "EC", "crv": "P-256", "x": Base64URL.encode(self.x), "y": Base64URL.encode(self.y),
            "use": "sig", "alg": "ES256", "kid": keyID ?? self.thumbprint,
        ]
    }

    // MARK: Verification

    /// Whether `signature` is a valid ES256 signature of `message`.
    public func isValidSignature(_ signature: ES256Signature, for message: some Collection<UInt8>) -> Bool {
        guard !signature.hasZeroHalf, let der = try? signature.derRepresentation else { return false }
        return self.key.verifySHA256(signature: der, message: Array(message))
    }

    /// Whether `raw` is a valid JOSE ES256 signature (exactly 64 bytes `R ‖ S`) of `message`.
    ///
    /// A DER-encoded signature is rejected, whatever its content.
    public func isValidSignature(raw: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        guard let signature = try? ES256Signature(rawRepresentation: raw) else { return false }
        return self.isValidSignature(signature, for: message)
    }
}
