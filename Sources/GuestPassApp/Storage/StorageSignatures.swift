import Foundation
import GuestPassCrypto

/// Signed URLs' tokens: `?token=` of `/object/sign/…` (download) and `/object/upload/sign/…` (upload).
///
/// Design: clients treat the token as opaque (only the `token` query name matters), so it is GuestPass's own compact
/// form: base64url(JSON claims) `.` base64url(HMAC-SHA256). The key derives from the refresh-token key, as the email
/// codes' keys do, so it survives a signing-key rotation and never signs access tokens. The claims bind the app, the
/// scope, the exact `bucket/key`, the expiry, and for uploads the signer (owner, device) and `upsert`; the signature is
/// checked before any claim is believed.
struct StorageSigner: Sendable {
    enum Scope: String, Codable {
        case download
        case upload
    }

    struct Claims: Codable, Equatable {
        /// `<bucket>/<key>`.
        let url: String
        let scope: Scope
        let app: UUID
        let exp: Int
        var owner: UUID? = nil
        var device: UUID? = nil
        var upsert: Bool? = nil
    }

    private let key: [UInt8]

    init(refreshTokenKey: [UInt8]) {
        self.key = HMACSHA256.authenticationCode(for: Array("guestpass.storage-url.v1".utf8), key: refreshTokenKey)
    }

    func token(_ claims: Claims) throws -> String {
        let payload = Base64URL.encode(try CompactJSONEncoder().encode(claims))
        return payload + "." + Base64URL.encode(HMACSHA256.authenticationCode(for: Array(payload.utf8), key: self.key))
    }

    /// The claims of `token` when it is this server's, for `scope` and `url`, and not expired at `now`; else the
    /// error storage answers (`InvalidSignature`, or `InvalidJWT` for an expired one, as Supabase v1.70 does).
    func verify(_ token: String?, scope: Scope, url: String, now: Date = Date()) throws -> Claims {
        guard let token, token.utf8.count <= 4096 else { throw StorageFailure.invalidSignature }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let mac = Base64URL.decode(String(parts[1])),
            HMACSHA256.isValidAuthenticationCode(mac, for: Array(parts[0].utf8), key: self.key),
            let json = Base64URL.decode(String(parts[0])),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(json))
        else { throw StorageFailure.invalidSignature }
        guard claims.scope == scope, claims.url == url else { throw StorageFailure.invalidSignature }
        guard Double(claims.exp) > now.timeIntervalSince1970 else { throw StorageFailure.expiredSignature }
        return claims
    }
}
