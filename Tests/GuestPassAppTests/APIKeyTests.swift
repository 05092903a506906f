import Foundation
import GuestPassPostgres
import Testing

@testable import GuestPassApp
@testable import GuestPassStore

/// API keys: the format refused without a database call, and a cache a flood of made-up keys cannot empty.
@Suite struct APIKeyTests {
    @Test func generatedKeysHaveTheirKindAndOthersNone() throws {
        let publishable = try APIKey.generate(kind: .publishable)
        let secret = try APIKey.generate(kind: .secret)
        #expect(APIKey.kind(of: publishable.value) == .publishable)
        #expect(APIKey.kind(of: secret.value) == .secret)
        #expect(publishable.value != (try APIKey.generate(kind: .publishable)).value)
        for text in [
            "", "gp_pub_nope", String(publishable.value.dropLast()), publishable.value + "0", publishable.value.uppercased(),
            "gp_xxx_" + String(repeating: "a", count: 64), "gp_pub_" + String(repeating: "g", count: 64), String(repeating: "a", count: 5000),
        ] {
            #expect(APIKey.kind(of: text) == nil, "\(text.prefix(20))")
        }
    }

    /// With the pool shut down, any database call fails: what still answers was answered without one.
    @Test func malformedKeysCostNoRoundTripAndKnownKeysSurviveAFlood() async throws {
        try await TestService.with { service in
            let tenant = try await service.createTenant()
            let pool = PostgresPool(configuration: service.configuration.postgres)
            let resolver = APIKeyResolver(functions: ServerFunctions(pool: pool), capacity: 4)

            let known = try await resolver.resolve(tenant.publishableKey)
            #expect(known?.appID == tenant.appID)
            #expect(known?.role == .anon)
            for _ in 0..<10 {
                #expect(try await resolver.resolve(try APIKey.generate(kind: .publishable).value) == nil)
            }
            #expect(resolver.cachedCount <= 4)
            await pool.shutdown()

            #expect(try await resolver.resolve(tenant.publishableKey)?.appID == tenant.appID, "the known key is still cached")
            #expect(try await resolver.resolve("gp_pub_nope") == nil, "a malformed key is refused without the database")
            #expect(try await resolver.resolve(String(repeating: "x", count: 5000)) == nil)
            await #expect(throws: PostgresError.self) { try await resolver.resolve(try APIKey.generate(kind: .secret).value) }
        }
    }
}
