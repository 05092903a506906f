import Foundation
@testable import GuestPassApp
import HTTPTypes
import Testing
import GuestPassPostgres
import GuestPassJSON

@Suite struct SessionTests {
    /// Rotation on every use; replaying the parent of the active token, or any used token within the reuse window,
    /// returns the active session; a used token replayed after the window revokes the whole family.
    @Test func refreshRotatesAndReplaysFollowTheReuseRules() async throws {
        try await TestService.withServedTenant({ $0.refreshReuseWindow = 30 }) { service, tenant, client in
            let signUp = try await client.signUp(tenant, deviceSecret: UUID().uuidString)
            let userID = try #require(signUp.user?["id"])
            let token0 = try #require(signUp.string("refresh_token"))

            let first = try await client.refresh(tenant, token0)
            #expect(first.status == .ok)
            #expect(first.user?["id"] == userID)
            let token1 = try #require(first.string("refresh_token"))
            #expect(token1 != token0)
            let second = try await client.refresh(tenant, token1)
            let token2 = try #require(second.string("refresh_token"))
            #expect(token2 != token1)

            // token1 is the parent of the active token2: the active session comes back, nothing rotates.
            let parentReplay = try await client.refresh(tenant, token1)
            #expect(parentReplay.status == .ok)
            #expect(parentReplay.string("refresh_token") == token2)
            // token0 was used within the window: the active session too.
            let withinWindow = try await client.refresh(tenant, token0)
            #expect(withinWindow.status == .ok)
            #expect(withinWindow.string("refresh_token") == token2)
            #expect(withinWindow.string("access_token") != nil)

            // After the window (30 s, moved by ageing the revocation, not by waiting), replaying token0 — not the
            // parent of the active one — is theft: the family is revoked.
            try await service.owner.execute(
                "UPDATE guestpass.refresh_tokens SET revoked_at = revoked_at - interval '1 minute' WHERE revoked_at IS NOT NULL"
            )
            let stolen = try await client.refresh(tenant, token0)
            #expect(stolen.status == .badRequest)
            #expect(stolen.errorCode == GoTrueCode.refreshTokenAlreadyUsed)
            for token in [token0, token1, token2] {
                let after = try await client.refresh(tenant, token)
                #expect(after.status == .badRequest, "every token of the family fails")
            }
            // The access token of the revoked session no longer reads the profile.
            let profile = try await client.call(.get, "/auth/v1/user", apiKey: tenant.publishableKey, bearer: second.string("access_token"))
            #expect(profile.status == .forbidden)
            #expect(profile.errorCode == GoTrueCode.sessionNotFound)
        }
    }

    @Test func garbageAndForeignRefreshTokensAreNotFound() async throws {
        try await TestService.with { service in
            let tenant = try await service.createTenant(name: "one")
            let other = try await service.createTenant(name: "two")

            try await service.withServer { client in
                let garbage = try await client.refresh(tenant, "not-a-token")
                #expect(garbage.status == .badRequest)
                #expect(garbage.errorCode == GoTrueCode.refreshTokenNotFound)
                let session = try await client.signUp(tenant)
                let token = try #require(session.string("refresh_token"))
                let foreign = try await client.refresh(other, token)
                #expect(foreign.status == .badRequest, "a session of another app is not found")
                let missing = try await client.call(.post, "/auth/v1/token?grant_type=refresh_token", apiKey: tenant.publishableKey, json: "{}")
                #expect(missing.status == .badRequest)
                let grant = try await client.call(.post, "/auth/v1/token?grant_type=password", apiKey: tenant.publishableKey, json: "{}")
                #expect(grant.status == .badRequest)
            }
        }
    }

    @Test func concurrentRefreshesOfOneTokenAllGetTheSameActiveSession() async throws {
        try await TestService.with { service in
            let tenant = try await service.createTenant()

            try await service.withServer { client in
                let signUp = try await client.signUp(tenant)
                let token0 = try #require(signUp.string("refresh_token"))
                let tokens = try await withThrowingTaskGroup(of: String?.self) { group in
                    for _ in 0..<30 { group.addTask { try await client.refresh(tenant, token0).string("refresh_token") } }
                    return try await group.reduce(into: [String?]()) { $0.append($1) }
                }
                #expect(tokens.allSatisfy { $0 != nil })
                #expect(Set(tokens.compactMap { $0 }).count == 1, "one rotation; every retry gets the same active token")
            }
            #expect(try await service.count("SELECT count(*) FROM guestpass.refresh_tokens") == 2)
        }
    }

    @Test func userAndLogoutByScope() async throws {
        try await TestService.with { service in
            let tenant = try await service.createTenant()
            let secret = UUID().uuidString

            try await service.withServer { client in
                // Three sessions of one guest (same device signing in three times).
                var sessions: [JSONResponse] = []
                for _ in 0..<3 { sessions.append(try await client.signUp(tenant, deviceSecret: secret)) }
                let access = sessions.map { $0.string("access_token")! }
                let refresh = sessions.map { $0.string("refresh_token")! }

                let profile = try await client.call(.get, "/auth/v1/user", apiKey: tenant.publishableKey, bearer: access[0])
                #expect(profile.status == .ok)
                #expect(profile["id"] == sessions[0].user?["id"])
                #expect(profile["is_anonymous"] == .bool(true))
                let anonymous = try await client.call(.get, "/auth/v1/user", apiKey: tenant.publishableKey)
                #expect(anonymous.status == .unauthorized)
                let forged = try await client.call(.get, "/auth/v1/user", apiKey: tenant.publishableKey, bearer: access[0] + "x")
                #expect(forged.status == .unauthorized)
                #expect(forged.headers[.wwwAuthenticate] != nil)

                let badScope = try await client.call(.post, "/auth/v1/logout?scope=everyone", apiKey: tenant.publishableKey, bearer: access[0])
                #expect(badScope.status == .badRequest)

                // local: only session 0 ends.
                #expect(
                    try await client.call(.post, "/auth/v1/logout?scope=local", apiKey: tenant.publishableKey, bearer: access[0]).status == .noContent
                )
                #expect(try await client.refresh(tenant, refresh[0]).status == .badRequest)
                #expect(try await client.call(.get, "/auth/v1/user", apiKey: tenant.publishableKey, bearer: access[0]).status == .forbidden)
                #expect(try await client.call(.get, "/auth/v1/user", apiKey: tenant.publishableKey, bearer: access[1]).status == .ok)

                // others: every session but session 1 ends.
                #expect(
                    try await client.call(.post, "/auth/v1/logout?scope=others", apiKey: tenant.publishableKey, bearer: access[1]).status
                        == .noContent)
                #expect(try await client.refresh(tenant, refresh[2]).status == .badRequest)
                let stillThere = try await client.refresh(tenant, refresh[1])
                #expect(stillThere.status == .ok)

                // global: everything ends.
                let current = try #require(stillThere.string("access_token"))
                #expect(
                    try await client.call(.post, "/auth/v1/logout?scope=global", apiKey: tenant.publishableKey, bearer: current).status == .noContent)
                #expect(try await client.refresh(tenant, try #require(stillThere.string("refresh_token"))).status == .badRequest)
            }
            #expect(try await service.count("SELECT count(*) FROM guestpass.sessions WHERE revoked_at IS NULL") == 0)
        }
    }

    /// `Authorization`: the scheme in any case, spaces and tabs around the token ignored; another scheme, or the
    /// scheme alone, carries no token.
    @Test func authorizationHeaderSpellings() async throws {
        try await TestService.with { service in
            let tenant = try await service.createTenant()
            try await service.withServer { client in
                let access = try #require(try await client.signUp(tenant).string("access_token"))
                func profile(_ authorization: String) async throws -> HTTPResponse.Status {
                    var headers = HTTPFields()
                    headers[.authorization] = authorization
                    return try await client.call(.get, "/auth/v1/user", apiKey: tenant.publishableKey, headers: headers).status
                }
                for spelling in ["Bearer \(access)", "bearer \(access)", "BEARER \(access)", "bEaReR   \(access)\t ", "Bearer \t\(access)"] {
                    #expect(try await profile(spelling) == .ok, "\(spelling.prefix(12))…")
                }
                for refused in ["Basic \(access)", "Bearer", "Bearer    ", "Bearer\(access)", "Token \(access)", "Bearer \(access)x"] {
                    #expect(try await profile(refused) == .unauthorized, "\(refused.prefix(12))…")
                }
            }
        }
    }

    @Test func tokenOfOneAppIsRefusedWithAnotherAppsKey() async throws {
        try await TestService.with { service in
            let tenant = try await service.createTenant(name: "one")
            let other = try await service.createTenant(name: "two")

            try await service.withServer { client in
                let session = try await client.signUp(tenant)
                let access = try #require(session.string("access_token"))
                let crossed = try await client.call(.get, "/auth/v1/user", apiKey: other.publishableKey, bearer: access)
                #expect(crossed.status == .unauthorized)
                let settings = try await client.call(.get, "/auth/v1/settings", apiKey: tenant.publishableKey)
                #expect(settings["external"]?.objectValue?["anonymous_users"] == .bool(true))
            }
        }
    }
}
