public import Foundation

/// A key a `JWTVerifier` accepts, bound to exactly one algorithm and one `kid` (RFC 8725 §3.1).
public struct JWTVerificationKey: Sendable {
    enum Material: Sendable {
        case es256(ES256PublicKey)
        case hs256(HS256Key)
        case rs256(RSAPublicKey)
    }

    /// The `kid` tokens must carry to select this key.
    public let keyID: String
    let material: Material

    /// An ES256 public key; `keyID` defaults to its RFC 7638 thumbprint.
    public static func es256(_ key: ES256PublicKey, keyID: String? = nil) -> JWTVerificationKey {
        JWTVerificationKey(keyID: keyID ?? key.thumbprint, material: .es256(key))
    }

    /// An HS256 shared secret.
    public static func hs256(_ key: HS256Key, keyID: String) -> JWTVerificationKey {
        JWTVerificationKey(keyID: keyID, material: .hs256(key))
    }

    /// An RS256 public key, e.g. one entry of Apple's JWKS with its `kid`.
    public static func rs256(_ key: RSAPublicKey, keyID: String) -> JWTVerificationKey {
        JWTVerificationKey(keyID: keyID, material: .rs256(key))
    }

    /// The only algorithm this key is used with.
    public var algorithm: JWTAlgorithm {
        switch self.material {
        case .es256: .es256
        case .hs256: .hs256
        case .rs256: .rs256
        }
    }

    /// Checks `signature` over the exact received `signingInput` (`header.payload` ASCII) with this key's algorithm.
    func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8]) -> Bool {
        switch self.material {
        case .es256(let key): key.isValidSignature(raw: signature, for: signingInput)
        case .hs256(let key): key.isValidAuthenticationCode(signature, for: signingInput)
        case .rs256(let key): key.isValidSignature(signature, for: signingInput)
        }
    }
}

/// A JSON Web Key Set (RFC 7517 §5) of public ES256 verification keys, for publishing at a JWKS endpoint.
///
/// Only ES256 public keys are included: HS256 secrets are never published, and RS256 keys here are other
/// parties' keys (Apple's), not ours to publish.
public struct JWKSet: Sendable {
    /// The JWK objects, in the order given.
    public let keys: [[String: String]]

    /// The set of the ES256 keys among `verificationKeys`, each with its `kid`.
    public init(_ verificationKeys: [JWTVerificationKey]) {
        self.keys = verificationKeys.compactMap { key in
            guard case .es256(let publicKey) = key.material else { return nil }
            return publicKey.jwk(keyID: key.keyID)
        }
    }

    /// `{"keys":[...]}` as JSON, with sorted member names.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(["keys": self.keys])
    }
}
