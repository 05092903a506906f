import Foundation
import GuestPassCrypto
import GuestPassPostgres
import NIOConcurrencyHelpers

/// What an API key grants: its app, and the role it stands for.
struct APIKeyGrant: Sendable, Equatable {
    let appID: UUID
    /// `anon` for a publishable key, `service_role` for a secret key.
    let role: DatabaseRole
}

/// Resolves API keys to their app, caching answers for a minute so most requests need no extra round trip.
/// Keys are looked up by SHA-256 (they are stored hashed) through `guestpass_server.resolve_api_key`.
final class APIKeyResolver: Sendable {
    private let pool: PostgresPool
    private let cache = NIOLockedValueBox([String: (grant: APIKeyGrant?, expires: ContinuousClock.Instant)]())
    private let timeToLive: Duration = .seconds(60)

    init(pool: PostgresPool) { self.pool = pool }

    /// The grant of `key`, or nil for an unknown or revoked key.
    func resolve(_ key: String) async throws -> APIKeyGrant? {
        guard key.utf8.count <= 200 else { return nil }
        let hash = Digest.sha256Hex(key)
        let now = ContinuousClock.now
        if let hit = self.cache.withLockedValue({ $0[hash] }), hit.expires > now { return hit.grant }
        let results = try await self.pool.requestTransaction(
            RequestIdentity(role: .anon, claimsJSON: #"{"role":"anon"}"#), readOnly: true,
            [PostgresStatement("SELECT app_id, kind FROM guestpass_server.resolve_api_key($1)", [hash], reusesPlan: true)]
        )
        var grant: APIKeyGrant?
        if let row = results.first?.first {
            let kind = try row.decode(String.self, "kind")
            grant = APIKeyGrant(appID: try row.decode(UUID.self, "app_id"), role: kind == "secret" ? .serviceRole : .anon)
        }
        self.cache.withLockedValue { cache in
            if cache.count > 10_000 { cache.removeAll() }
            cache[hash] = (grant, now + self.timeToLive)
        }
        return grant
    }
}
