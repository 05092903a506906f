import Foundation
import GuestPassCrypto
import GuestPassPostgres
import NIOConcurrencyHelpers

/// What an API key grants: its app, and the role it stands for.
struct APIKeyGrant: Sendable, Equatable {
    let appID: UUID
    /// `anon` for a publishable key, `service_role` for a secret key.
    let role: DatabaseRole
    /// The claims of a request made with this key and no token (`{"app_id":…,"role":…}`), encoded once per grant
    /// instead of once per request.
    let claimsJSON: String
    /// The same claims with role `anon`, for the server-side steps run as `anon` (sign-up, refresh).
    let anonClaimsJSON: String

    init(appID: UUID, role: DatabaseRole) {
        self.appID = appID
        self.role = role
        self.claimsJSON = RequestIdentity.keyClaimsJSON(role, app: appID)
        self.anonClaimsJSON = role == .anon ? self.claimsJSON : RequestIdentity.keyClaimsJSON(.anon, app: appID)
    }
}

/// An API key: `gp_pub_` (publishable) or `gp_sec_` (secret) followed by 64 lowercase hex digits of OpenSSL randomness.
/// Only its SHA-256 is stored; the value is shown once, when it is created.
public struct APIKey: Sendable {
    public enum Kind: String, Sendable {
        case publishable
        case secret

        var tag: String { self == .publishable ? "gp_pub_" : "gp_sec_" }
    }

    public let kind: Kind
    public let value: String

    /// A new random key of `kind`.
    public static func generate(kind: Kind) throws -> APIKey {
        APIKey(kind: kind, value: kind.tag + Digest.hex(try SecureRandom.bytes(32)))
    }

    /// The kind of a well-formed key, or nil: anything else cannot be a key, and is refused without a database call.
    public static func kind(of text: String) -> Kind? {
        let bytes = text.utf8
        guard bytes.count == 7 + 64 else { return nil }
        let kind: Kind
        if text.hasPrefix(Kind.publishable.tag) { kind = .publishable } else if text.hasPrefix(Kind.secret.tag) { kind = .secret } else { return nil }
        let isHex = bytes.dropFirst(7).allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
        }
        return isHex ? kind : nil
    }

    /// The stored form: lowercase hex SHA-256 of the key.
    public var hash: String { Digest.sha256Hex(self.value) }
    /// The first characters, stored for display.
    public var prefix: String { String(self.value.prefix(12)) }

}

/// Resolves API keys to their app, caching answers for a minute so most requests need no extra round trip.
/// Keys are looked up by SHA-256 (they are stored hashed) through `guestpass_server.resolve_api_key`. A string that
/// is not a well-formed key is refused before any lookup. The cache holds at most `capacity` keys; when full, expired
/// entries and unknown keys make room first, so a flood of made-up keys cannot push the known ones out.
final class APIKeyResolver: Sendable {
    private let functions: ServerFunctions
    private let cache = NIOLockedValueBox([String: (grant: APIKeyGrant?, expires: ContinuousClock.Instant)]())
    private let timeToLive: Duration = .seconds(60)
    private let capacity: Int

    init(functions: ServerFunctions, capacity: Int = 10_000) {
        self.functions = functions
        self.capacity = capacity
    }

    /// The grant of `key`, or nil for a malformed, unknown or revoked key.
    func resolve(_ key: String) async throws -> APIKeyGrant? {
        guard APIKey.kind(of: key) != nil else { return nil }
        let hash = Digest.sha256Hex(key)
        let now = ContinuousClock.now
        if let hit = self.cache.withLockedValue({ $0[hash] }), hit.expires > now { return hit.grant }
        let grant = try await self.functions.resolveAPIKey(hash: hash)
        self.cache.withLockedValue { cache in
            if cache[hash] == nil, cache.count >= self.capacity {
                // Full: drop what expired and every unknown key; only then, if still full, the oldest known key.
                cache = cache.filter { $0.value.expires > now && $0.value.grant != nil }
                if cache.count >= self.capacity, let oldest = cache.min(by: { $0.value.expires < $1.value.expires })?.key {
                    cache.removeValue(forKey: oldest)
                }
            }
            cache[hash] = (grant, now + self.timeToLive)
        }
        return grant
    }

    /// How many keys the cache holds (tests).
    var cachedCount: Int { self.cache.withLockedValue { $0.count } }
}
