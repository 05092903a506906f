import Foundation
import GuestPassCrypto
import NIOConcurrencyHelpers

/// Issues and verifies access tokens, and derives refresh tokens.
///
/// A refresh token is `gpr_` + base64url(session id ‖ counter ‖ HMAC-SHA256(key, session id ‖ counter)[0..<16]).
/// The database stores only its SHA-256; because the token is derived, the server can hand back a session's active
/// token when a client replays an older one (the reuse rule) without ever storing a token in the clear.
struct TokenService: Sendable {
    let configuration: AuthConfiguration
    private let verifier: JWTVerifier
    private let cache = VerifiedTokenCache(capacity: 10_000)

    init(configuration: AuthConfiguration) throws {
        self.configuration = configuration
        self.verifier = try JWTVerifier(
            keys: configuration.verificationKeys, issuers: [configuration.issuer], audiences: [configuration.audience]
        )
    }

    /// The public keys for `/.well-known/jwks.json`.
    var keySet: JWKSet { JWKSet(self.configuration.verificationKeys) }

    // MARK: Access tokens

    struct IssuedAccessToken {
        let token: String
        let expiresAt: Int
    }

    func issueAccessToken(for user: SessionUser, now: Date = Date()) throws -> IssuedAccessToken {
        let issuedAt = Int(now.timeIntervalSince1970)
        let expiresAt = issuedAt + self.configuration.accessTokenLifetime
        let claims = AccessClaims(
            sub: user.id.lowercasedString, role: "authenticated", aud: self.configuration.audience, iss: self.configuration.issuer,
            exp: expiresAt, iat: issuedAt, session_id: user.sessionID.lowercasedString, is_anonymous: user.isAnonymous,
            amr: [.init(method: user.authenticationMethod ?? (user.isAnonymous ? "anonymous" : "oauth"), timestamp: issuedAt)], aal: "aal1",
            app_metadata: user.appMetadata, user_metadata: user.userMetadata, email: user.email ?? "", phone: "",
            app_id: user.appID.lowercasedString, device_id: user.deviceID?.lowercasedString
        )
        return IssuedAccessToken(token: try self.configuration.signer.sign(claims), expiresAt: expiresAt)
    }

    /// Verifies an access token (signature bound to our keys, `exp`/`nbf`/`iat` with leeway, `aud`, `iss`).
    /// Verified tokens are cached until they expire: ES256 verification costs more than a database round trip.
    func verifyAccessToken(_ token: String, now: Date = Date()) throws -> VerifiedAccessToken {
        let nowSeconds = Int(now.timeIntervalSince1970)
        if let cached = self.cache.lookup(token, now: nowSeconds) { return cached }
        let verified = try self.verifier.verify(token, now: now)
        let claims = try JSONDecoder().decode(AccessClaims.ActedOn.self, from: verified.payload)
        guard claims.role == "authenticated", let userID = UUID(uuidString: claims.sub),
            let sessionID = UUID(uuidString: claims.session_id), let appID = UUID(uuidString: claims.app_id)
        else { throw JWTError(.invalidClaims) }
        var deviceID: UUID?
        if let device = claims.device_id {
            guard let parsed = UUID(uuidString: device) else { throw JWTError(.invalidClaims) }
            deviceID = parsed
        }
        let result = VerifiedAccessToken(
            userID: userID, sessionID: sessionID, appID: appID, deviceID: deviceID, expiresAt: claims.exp,
            claimsJSON: String(decoding: verified.payload, as: UTF8.self)
        )
        self.cache.store(token, result, now: nowSeconds)
        return result
    }

    /// Why a bearer token gives no access to an app (`accessToken(_:ofApp:)`).
    enum AccessTokenRefusal: Error {
        /// Signed by us, but past its `exp` (with the verifier's leeway).
        case expired
        /// Signed by us, but its `nbf` is still ahead (beyond the leeway): another replica's clock runs ahead.
        case notYetValid
        /// Signed by us, but its `iat` is ahead (beyond the leeway).
        case issuedInFuture
        /// A JWT that fails verification (signature, algorithm, claims).
        case invalid
        /// Not a JWT at all, or claims that do not decode.
        case malformed
        /// Valid, but of another app than the API key's.
        case otherApp
    }

    /// The access token `bearer`, verified and issued for `app`: the one check that the REST routes (`Authenticator`)
    /// and Realtime's joins and token refreshes make of a bearer token.
    func accessToken(_ bearer: String, ofApp app: UUID) throws(AccessTokenRefusal) -> VerifiedAccessToken {
        let token: VerifiedAccessToken
        do {
            token = try self.verifyAccessToken(bearer)
        } catch let error as JWTError {
            switch error.reason {
            case .expired: throw .expired
            case .notYetValid: throw .notYetValid
            case .issuedInFuture: throw .issuedInFuture
            default: throw .invalid
            }
        } catch {
            throw .malformed
        }
        guard token.appID == app else { throw .otherApp }
        return token
    }

    // MARK: Refresh tokens

    func refreshToken(session: UUID, counter: Int) -> String {
        let body = Self.bytes(of: session) + Self.bytes(of: UInt32(counter))
        let mac = HMACSHA256.authenticationCode(for: body, key: self.configuration.refreshTokenKey).prefix(16)
        return "gpr_" + Base64URL.encode(body + mac)
    }

    /// The session and counter of a well-formed refresh token of ours, or nil.
    func parseRefreshToken(_ token: String) -> (session: UUID, counter: Int)? {
        guard token.hasPrefix("gpr_"), token.utf8.count < 100, let raw = Base64URL.decode(String(token.dropFirst(4))), raw.count == 36 else {
            return nil
        }
        let body = Array(raw[0..<20])
        let expected = HMACSHA256.authenticationCode(for: body, key: self.configuration.refreshTokenKey).prefix(16)
        guard ConstantTime.equals(Array(raw[20..<36]), Array(expected)) else { return nil }
        let session = UUID(
            uuid: (
                body[0], body[1], body[2], body[3], body[4], body[5], body[6], body[7], body[8], body[9], body[10], body[11], body[12], body[13],
                body[14], body[15]
            ))
        let counter = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        return (session, counter)
    }

    private static func bytes(of uuid: UUID) -> [UInt8] {
        withUnsafeBytes(of: uuid.uuid) { Array($0) }
    }

    private static func bytes(of value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }
}

/// A bounded map from token to its verification result, honouring `exp`.
final class VerifiedTokenCache: Sendable {
    private let entries = NIOLockedValueBox([String: VerifiedAccessToken]())
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func lookup(_ token: String, now: Int) -> VerifiedAccessToken? {
        self.entries.withLockedValue { entries in
            guard let entry = entries[token] else { return nil }
            guard entry.expiresAt > now else {
                entries[token] = nil
                return nil
            }
            return entry
        }
    }

    func store(_ token: String, _ value: VerifiedAccessToken, now: Int) {
        self.entries.withLockedValue { entries in
            if entries.count >= self.capacity {
                entries = entries.filter { $0.value.expiresAt > now }
                if entries.count >= self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[token] = value
        }
    }
}

extension UUID {
    /// The canonical lowercase form used in tokens and JSON.
    var lowercasedString: String { self.uuidString.lowercased() }
}
