import Foundation
@testable import GuestPassApp
import GuestPassPostgres
import HTTPTypes
import HummingbirdTesting
import Testing
import GuestPassJSON

/// `get_quota` / `consume_quota` through `/rest/v1/rpc`: exact under concurrency, idempotent, per-timezone days.
@Suite struct QuotaTests {
    static func consume(_ client: any TestClientProtocol, _ tenant: TestTenant, _ access: String, key: String? = nil) async throws -> JSONResponse {
        var headers: HTTPFields = [:]
        if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
        return try await client.call(.post, "/rest/v1/rpc/consume_quota", apiKey: tenant.publishableKey, bearer: access, json: "{}", headers: headers)
    }

    @Test func twoHundredConcurrentConsumesSpendExactlyWhatThereIs() async throws {
        try await TestService.withServedTenant(examples: true) { service, tenant, client in
            let session = try await client.signUp(tenant, deviceSecret: UUID().uuidString)
            let access = try #require(session.string("access_token"))
            let userID = try #require(session.user?["id"]?.stringValue)
            try await service.owner.execute("SELECT guestpass.grant_credits_admin($1, 2, 'test')", [UUID(uuidString: userID)!])

            let before = try await client.call(.post, "/rest/v1/rpc/get_quota", apiKey: tenant.publishableKey, bearer: access, json: "{}")
            #expect(before["quota_remaining"] == .number(3))
            #expect(before["credits_remaining"] == .number(2))
            #expect(before["daily_limit"] == .number(3))
            #expect(before["is_premium"] == .bool(false))

            let outcomes = try await withThrowingTaskGroup(of: JSONResponse.self) { group in
                for _ in 0..<200 { group.addTask { try await Self.consume(client, tenant, access) } }
                return try await group.reduce(into: [JSONResponse]()) { $0.append($1) }
            }
            let succeeded = outcomes.filter { $0.status == .ok }
            let refused = outcomes.filter { $0.status == .tooManyRequests }
            #expect(succeeded.count == 5)
            #expect(refused.count == 195)
            #expect(outcomes.allSatisfy { $0.status.code < 500 })
            #expect(refused.allSatisfy { Int($0.headers[.retryAfter] ?? "") ?? 0 >= 1 })
            #expect(refused.first?.errorCode == SQLState.rateLimited.rawValue)
            #expect(Set(succeeded.compactMap { $0.string("charged") }) == ["free", "credit"])

            let after = try await client.call(.post, "/rest/v1/rpc/get_quota", apiKey: tenant.publishableKey, bearer: access, json: "{}")
            #expect(after["quota_remaining"] == .number(0))
            #expect(after["credits_remaining"] == .number(0))
            let ledger = try await service.count(
                "SELECT coalesce(sum(change), 0) - (SELECT credits_balance FROM public.users WHERE id = $1) FROM guestpass.credit_ledger WHERE user_id = $1",
                [UUID(uuidString: userID)!]
            )
            #expect(ledger == 0, "the ledger sums to the balance")
        }
    }

    @Test func retriedConsumeWithOneIdempotencyKeyChargesOnce() async throws {
        try await TestService.withServedTenant(examples: true) { service, tenant, client in
            let session = try await client.signUp(tenant, deviceSecret: UUID().uuidString)
            let access = try #require(session.string("access_token"))

            let first = try await Self.consume(client, tenant, access, key: "req-1")
            let retry = try await Self.consume(client, tenant, access, key: "req-1")
            #expect(first.status == .ok && retry.status == .ok)
            #expect(first.body == retry.body, "a retry returns the first answer")
            #expect(first["quota_remaining"] == .number(2))

            let concurrent = try await withThrowingTaskGroup(of: JSONResponse.self) { group in
                for _ in 0..<50 { group.addTask { try await Self.consume(client, tenant, access, key: "req-2") } }
                return try await group.reduce(into: [JSONResponse]()) { $0.append($1) }
            }
            #expect(concurrent.allSatisfy { $0.status == .ok })
            #expect(Set(concurrent.map { $0["quota_remaining"]?.jsonText ?? "-" }).count == 1)
            let quota = try await client.call(.post, "/rest/v1/rpc/get_quota", apiKey: tenant.publishableKey, bearer: access, json: "{}")
            #expect(quota["quota_remaining"] == .number(1), "two keys, two charges")
        }
    }

    @Test func anotherUsersIDIsRefused() async throws {
        try await TestService.withServedTenant(examples: true) { service, tenant, client in
            let a = try await client.signUp(tenant, deviceSecret: UUID().uuidString)
            let b = try await client.signUp(tenant, deviceSecret: UUID().uuidString)
            let bID = try #require(b.user?["id"]?.stringValue)
            let response = try await client.call(
                .post, "/rest/v1/rpc/consume_quota", apiKey: tenant.publishableKey, bearer: a.string("access_token"),
                json: #"{"p_user_id":"\#(bID)"}"#
            )
            #expect(response.status == .forbidden)
            let own = try await client.call(
                .post, "/rest/v1/rpc/get_quota", apiKey: tenant.publishableKey, bearer: a.string("access_token"),
                json: #"{"p_user_id":"\#(try #require(a.user?["id"]?.stringValue))"}"#
            )
            #expect(own.status == .ok)
        }
    }

    /// Each user's day ends at midnight in their own time zone: Kiritimati (UTC+14) and Pago Pago (UTC−11)
    /// are 25 hours apart. The clock is set per transaction (`guestpass.clock_override`), not waited for.
    @Test func dayResetsAtTheUsersOwnMidnight() async throws {
        try await TestService.with(examples: true) { service in
            let tenant = try await service.createTenant()
            let users: [String: UUID] = try await service.withServer { client in
                var users: [String: UUID] = [:]
                for zone in ["Pacific/Kiritimati", "Pacific/Pago_Pago"] {
                    let session = try await client.signUp(tenant, deviceSecret: UUID().uuidString)
                    users[zone] = UUID(uuidString: try #require(session.user?["id"]?.stringValue))!
                }
                return users
            }
            for (zone, id) in users { try await service.owner.execute("UPDATE public.users SET timezone = $2 WHERE id = $1", [id, zone]) }
            let badZone = try await #require(throws: PostgresError.self) {
                try await service.owner.execute("UPDATE public.users SET timezone = 'Mars/Olympus' WHERE id = $1", [users["Pacific/Kiritimati"]!])
            }
            #expect(badZone.sqlState == SQLState("22023"))

            /// Consumes as `user` at `instant`, through the real `public.consume_quota` under the user's claims.
            func consume(_ user: UUID, at instant: String) async throws -> Int? {
                try await service.owner.withConnection { connection in
                    try await connection.run { connection in
                        try connection.execute("BEGIN")
                        defer { _ = try? connection.execute("ROLLBACK") }
                        try connection.execute("SELECT set_config('guestpass.clock_override', $1, true)", [instant])
                        try connection.execute(
                            "SELECT set_config('role', 'authenticated', true), set_config('request.jwt.claims', $1, true)",
                            [
                                #"{"sub":"\#(user.uuidString.lowercased())","role":"authenticated","app_id":"\#(tenant.appID.uuidString.lowercased())"}"#
                            ]
                        )
                        do {
                            let result = try connection.execute("SELECT (public.consume_quota() ->> 'quota_remaining')::int").rows[0].decode(
                                Int.self, at: 0)
                            try connection.execute("COMMIT")
                            return result
                        } catch let error as PostgresError where error.sqlState == SQLState("PT429") {
                            return nil
                        }
                    }
                }
            }
            let kiritimati = users["Pacific/Kiritimati"]!
            let pagoPago = users["Pacific/Pago_Pago"]!
            // 2026-03-10 09:30 UTC = 23:30 on the 10th in Kiritimati, 22:30 on the 9th in Pago Pago.
            for user in [kiritimati, pagoPago] {
                for expected in [2, 1, 0] { #expect(try await consume(user, at: "2026-03-10T09:30:00Z") == expected) }
                #expect(try await consume(user, at: "2026-03-10T09:45:00Z") == nil, "nothing left today")
            }
            // 10:30 UTC: past midnight in Kiritimati (00:30 on the 11th), still the 9th in Pago Pago (23:30).
            #expect(try await consume(kiritimati, at: "2026-03-10T10:30:00Z") == 2)
            #expect(try await consume(pagoPago, at: "2026-03-10T10:30:00Z") == nil)
            // 11:30 UTC: Pago Pago's midnight has passed (00:30 on the 10th).
            #expect(try await consume(pagoPago, at: "2026-03-10T11:30:00Z") == 2)
        }
    }
}
