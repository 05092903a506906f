import Foundation
import GuestPassCrypto
import GuestPassPostgres
import GuestPassStore
import NIOConcurrencyHelpers

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
