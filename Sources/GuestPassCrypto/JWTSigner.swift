import Foundation

/// Issues compact JWS tokens with one signing key and its `kid`.
///
/// The header is `{"alg":…,"kid":…,"typ":…}`; claims are encoded with `CompactJSONEncoder` (keys sorted, dates as
/// seconds since 1970: NumericDate, RFC 7519 §2).
public struct JWTSigner: Sendable {
    enum SigningKey: Sendable {
        case es256(ES256PrivateKey)
        case hs256(HS256Key)
        case rs256(RSAPrivateKey, RSAPublicKey)
    }

    let signingKey: SigningKey
    /// The `kid` written into every header.
    public let keyID: String
    /// The `typ` written into every header (`JWT` unless an explicit type was chosen, RFC 8725 §3.11).
    public let type: String
    /// The header's first segment, encoded once per signer (empty if that failed: `sign` then encodes it itself).
    private let headerSegment: String

    /// A signer for ES256 tokens.
    ///
    /// - Parameters:
    ///   - key: the private key.
    ///   - keyID: the `kid`; defaults to the RFC 7638 thumbprint of the public key.
    ///   - type: the header `typ`.
    public init(key: ES256PrivateKey, keyID: String? = nil, type: String = "JWT") {
        self.signingKey = .es256(key)
        self.keyID = keyID ?? key.publicKey.thumbprint
        self.type = type
        self.headerSegment = (try? Self.encodeHeader(algorithm: .es256, type: type, keyID: self.keyID)) ?? ""
    }

    /// A signer for HS256 tokens.
    ///
    /// - Parameters:
    ///   - key: the shared secret.
    ///   - keyID: the `kid` (required: a secret has no publishable thumbprint).
    ///   - type: the header `typ`.
    public init(key: HS256Key, keyID: String, type: String = "JWT") {
        self.signingKey = .hs256(key)
        self.keyID = keyID
        self.type = type
        self.headerSegment = (try? Self.encodeHeader(algorithm: .hs256, type: type, keyID: keyID)) ?? ""
    }

    /// A signer for RS256 tokens (the Apple stand-in's identity tokens).
    ///
    /// - Parameters:
    ///   - key: the private key.
    ///   - keyID: the `kid`.
    ///   - type: the header `typ`.
    /// - Throws: `OpenSSLError` when the public half cannot be derived.
    public init(key: RSAPrivateKey, keyID: String, type: String = "JWT") throws {
        self.signingKey = .rs256(key, try key.publicKey)
        self.keyID = keyID
        self.type = type
        self.headerSegment = (try? Self.encodeHeader(algorithm: .rs256, type: type, keyID: keyID)) ?? ""
    }

    /// The algorithm of the signing key.
    public var algorithm: JWTAlgorithm {
        switch self.signingKey {
        case .es256: .es256
        case .hs256: .hs256
        case .rs256: .rs256
        }
    }

    /// The key a `JWTVerifier` needs for this signer's tokens: the public key for ES256 and RS256, the secret for HS256.
    public var verificationKey: JWTVerificationKey {
        switch self.signingKey {
        case .es256(let key): .es256(key.publicKey, keyID: self.keyID)
        case .hs256(let key): .hs256(key, keyID: self.keyID)
        case .rs256(_, let publicKey): .rs256(publicKey, keyID: self.keyID)
        }
    }

    /// Signs `claims` and returns the compact serialization `header.payload.signature`.
    ///
    /// - Throws: `JWTError(.invalidClaims)` if `claims` does not encode to a JSON object; `EncodingError` or
    ///   `OpenSSLError` if encoding or signing fails.
    public func sign<Claims: Encodable>(_ claims: Claims) throws -> String {
        // What a verifier's `StrictJSON.isObject` accepts, known from the encoding itself (no second parse).
        guard let payload = try CompactJSONEncoder().encodeObject(claims, maximumDepth: StrictJSON.maximumDepth) else {
            throw JWTError(.invalidClaims)
        }
        let header =
            self.headerSegment.isEmpty
            ? try Self.encodeHeader(algorithm: self.algorithm, type: self.type, keyID: self.keyID) : self.headerSegment
        let signingInput = header + "." + Base64URL.encode(payload)
        let signature: [UInt8]
        switch self.signingKey {
        case .es256(let key): signature = try key.signature(for: Array(signingInput.utf8)).rawRepresentation
        case .hs256(let key): signature = key.authenticationCode(for: Array(signingInput.utf8))
        case .rs256(let key, _): signature = try key.signature(for: Array(signingInput.utf8))
        }
        return signingInput + "." + Base64URL.encode(signature)
    }
}

extension JWTSigner {
    /// The base64url JSON header `{"alg":…,"kid":…,"typ":…}`.
    private static func encodeHeader(algorithm: JWTAlgorithm, type: String, keyID: String) throws -> String {
        Base64URL.encode(try CompactJSONEncoder().encode(["alg": algorithm.rawValue, "typ": type, "kid": keyID]))
    }

    /// A 32-byte key derived from the signing key's secret material and `label` (HMAC-SHA256), for secrets that must
    /// be shared by every server holding this signing key (e.g. the refresh-token MAC key). It reveals nothing
    /// about the signing key.
    ///
    /// - Throws: `OpenSSLError` when the private key cannot be exported. There is no fallback: anything public (the
    ///   `kid`, the public key) would make the derived key public too.
    public func derivedKey(label: String) throws -> [UInt8] {
        let material: [UInt8]
        switch self.signingKey {
        case .es256(let key): material = Array(try key.pkcs8PEMRepresentation.utf8)
        case .hs256(let key): material = key.secret
        case .rs256(let key, _): material = Array(try key.pkcs8PEMRepresentation.utf8)
        }
        return HMACSHA256.authenticationCode(for: Array(label.utf8), key: material)
    }
}
