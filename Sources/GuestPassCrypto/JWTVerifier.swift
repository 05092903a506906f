public import Foundation

/// Verifies compact JWS tokens against a set of keys (several during a key rotation) and checks the registered
/// claims.
///
/// The algorithm is bound to the **key**, never taken from the token (RFC 8725 §3.1):
/// - a token with a `kid` is checked only against the configured key with that `kid` (`unknownKey` if none);
/// - a token without a `kid` is accepted only if exactly one configured key has the header's `alg`, and is
///   checked against that key (`unknownKey` otherwise). Configure a single key per algorithm, or always issue
///   `kid`s, to keep this unambiguous;
/// - the header's `alg` must then equal the selected key's algorithm (`algorithmMismatch`), so an HS256 token
///   can never be checked with an ES256 or RS256 public key used as an HMAC secret.
///
/// Order of checks: size, three strict base64url segments, header (strict JSON object; `alg`, `crit`, `typ`),
/// key selection, signature over the exact received bytes, payload (strict JSON object), then `exp`, `nbf`,
/// `iat`, `iss`, `aud`, then decoding of the caller's claims type.
public struct JWTVerifier: Sendable {
    private let keysByID: [String: JWTVerificationKey]
    /// Accepted `iss` values; nil skips the issuer check.
    public let issuers: Set<String>?
    /// Accepted `aud` values; nil means the verifier accepts no audience, so a token carrying `aud` is rejected
    /// (RFC 7519 §4.1.3).
    public let audiences: Set<String>?
    /// The required header `typ` (compared case-insensitively); nil skips the check.
    public let expectedType: String?
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds.
    public let leeway: TimeInterval
    /// Whether a token without `exp` is rejected (`missingClaim`).
    public let requiresExpiration: Bool
    /// Longer tokens are rejected as `malformed` before any decoding.
    public let maximumTokenLength: Int

    /// Creates a verifier.
    ///
    /// - Parameters:
    ///   - keys: the accepted keys; their `keyID`s must be distinct.
    ///   - issuers: accepted `iss` values, or nil not to check `iss`.
    ///   - audiences: accepted `aud` values (the token's `aud` must name at least one), or nil to accept only
    ///     tokens without `aud`.
    ///   - expectedType: the required header `typ`, or nil.
    ///   - leeway: clock skew tolerated on time claims, in seconds (default 30).
    ///   - requiresExpiration: reject tokens without `exp` (default true).
    ///   - maximumTokenLength: the largest accepted token, in bytes (default 8 KiB).
    /// - Throws: `JWTError(.duplicateKeyID)` if two keys share a `kid`.
    public init(
        keys: [JWTVerificationKey], issuers: Set<String>? = nil, audiences: Set<String>? = nil,
        expectedType: String? = nil, leeway: TimeInterval = 30, requiresExpiration: Bool = true,
        maximumTokenLength: Int = 8192
    ) throws {
        var keysByID: [String: JWTVerificationKey] = [:]
        for key in keys {
            guard keysByID.updateValue(key, forKey: key.keyID) == nil else { throw JWTError(.duplicateKeyID) }
        }
        self.keysByID = keysByID
        self.issuers = issuers
        self.audiences = audiences
        self.expectedType = expectedType
        self.leeway = leeway
        self.requiresExpiration = requiresExpiration
        self.maximumTokenLength = maximumTokenLength
    }

    /// Verifies `token` and decodes its payload as `Claims` (dates as seconds since 1970).
    ///
    /// - Throws: `JWTError` only; a payload that does not decode as `Claims` is `.invalidClaims`.
    public func verify<Claims: Decodable>(_ token: String, as type: Claims.Type, now: Date = Date()) throws -> Claims {
        let verified = try self.verify(token, now: now)
        do {
            return try Self.decoder.decode(Claims.self, from: verified.payload)
        } catch {
            throw JWTError(.invalidClaims)
        }
    }

    /// Verifies `token` and returns its header and its payload JSON exactly as received.
    ///
    /// - Throws: `JWTError` only.
    public func verify(_ token: String, now: Date = Date()) throws -> VerifiedJWT {
        let bytes = Array(token.utf8)
        guard bytes.count <= self.maximumTokenLength else { throw JWTError(.malformed) }
        let segments = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3, let headerJSON = Base64URL.decode(ascii: segments[0]),
            let payload = Base64URL.decode(ascii: segments[1]), let signature = Base64URL.decode(ascii: segments[2]),
            StrictJSON.isObject(headerJSON), let header = try? Self.decoder.decode(RawHeader.self, from: Data(headerJSON))
        else { throw JWTError(.malformed) }

        guard let algorithm = header.alg.flatMap(JWTAlgorithm.init(rawValue:)) else {
            throw JWTError(.unsupportedAlgorithm)
        }
        guard !header.hasCritical else { throw JWTError(.unsupportedHeader) }
        if let expectedType = self.expectedType {
            guard let type = header.typ, type.caseInsensitiveCompare(expectedType) == .orderedSame else {
                throw JWTError(.wrongType)
            }
        }
        let key = try self.selectKey(keyID: header.kid, algorithm: algorithm)

        guard key.isValidSignature(signature, for: Array(bytes[..<segments[1].endIndex])) else {
            throw JWTError(.badSignature)
        }
        guard StrictJSON.isObject(payload) else { throw JWTError(.malformed) }
        try self.validateRegisteredClaims(in: payload, now: now)
        let verifiedHeader = JWTHeader(algorithm: algorithm, keyID: header.kid, type: header.typ)
        return VerifiedJWT(header: verifiedHeader, payload: Data(payload))
    }

    // MARK: Steps

    private func selectKey(keyID: String?, algorithm: JWTAlgorithm) throws -> JWTVerificationKey {
        let key: JWTVerificationKey
        if let keyID {
            guard let match = self.keysByID[keyID] else { throw JWTError(.unknownKey) }
            key = match
        } else {
            let candidates = self.keysByID.values.filter { $0.algorithm == algorithm }
            guard candidates.count == 1, let only = candidates.first else { throw JWTError(.unknownKey) }
            key = only
        }
        guard key.algorithm == algorithm else { throw JWTError(.algorithmMismatch) }
        return key
    }

    private func validateRegisteredClaims(in payload: [UInt8], now: Date) throws {
        guard let claims = try? Self.decoder.decode(RegisteredClaims.self, from: Data(payload)) else {
            throw JWTError(.invalidClaims)
        }
        let now = now.timeIntervalSince1970
        if let expiration = claims.exp {
            guard now < expiration + self.leeway else { throw JWTError(.expired) }
        } else if self.requiresExpiration {
            throw JWTError(.missingClaim)
        }
        if let notBefore = claims.nbf, now + self.leeway < notBefore { throw JWTError(.notYetValid) }
        if let issuedAt = claims.iat, issuedAt > now + self.leeway { throw JWTError(.issuedInFuture) }
        if let issuers = self.issuers {
            guard let issuer = claims.iss else { throw JWTError(.missingClaim) }
            guard issuers.contains(issuer) else { throw JWTError(.wrongIssuer) }
        }
        switch (self.audiences, claims.aud) {
        case (nil, nil): break
        case (nil, .some): throw JWTError(.wrongAudience)
        case (.some, nil): throw JWTError(.missingClaim)
        case (.some(let accepted), .some(let audience)):
            guard audience.values.contains(where: accepted.contains) else { throw JWTError(.wrongAudience) }
        }
    }

    private static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }
}

/// The header members the verifier looks at. `alg` is optional here so that a missing `alg` is reported as
/// `unsupportedAlgorithm`; non-string values fail decoding and are `malformed`.
private struct RawHeader: Decodable {
    let alg: String?
    let kid: String?
    let typ: String?
    let hasCritical: Bool

    private enum CodingKeys: String, CodingKey {
        case alg, kid, typ, crit
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.alg = try container.decodeIfPresent(String.self, forKey: .alg)
        self.kid = try container.decodeIfPresent(String.self, forKey: .kid)
        self.typ = try container.decodeIfPresent(String.self, forKey: .typ)
        self.hasCritical = container.contains(.crit)
    }
}

/// The registered claims checked by every verification (RFC 7519 §4.1); NumericDates may be fractional.
private struct RegisteredClaims: Decodable {
    let exp: Double?
    let nbf: Double?
    let iat: Double?
    let iss: String?
    let aud: JWTAudience?
}

extension JWTHeader {
    /// The header of `token`, read **without verifying anything**: only to choose how to verify it (e.g. which
    /// party's key set to look the `kid` up in). Never trust what it says until a `JWTVerifier` has checked the token.
    ///
    /// - Throws: `JWTError(.malformed)` when the first segment is not a base64url JSON object with string members;
    ///   `.unsupportedAlgorithm` when `alg` is missing or unknown.
    public static func peek(_ token: String) throws -> JWTHeader {
        let bytes = Array(token.utf8.prefix(8192))
        guard let end = bytes.firstIndex(of: UInt8(ascii: ".")), let json = Base64URL.decode(ascii: bytes[..<end]),
            StrictJSON.isObject(json), let header = try? JSONDecoder().decode(RawHeader.self, from: Data(json))
        else { throw JWTError(.malformed) }
        guard let algorithm = header.alg.flatMap(JWTAlgorithm.init(rawValue:)) else { throw JWTError(.unsupportedAlgorithm) }
        return JWTHeader(algorithm: algorithm, keyID: header.kid, type: header.typ)
    }
}
