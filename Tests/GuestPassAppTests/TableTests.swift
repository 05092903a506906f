import Foundation
@testable import GuestPassApp
import GuestPassPostgres
import GuestPassTestSupport
import HTTPTypes
import HummingbirdTesting
import PostgRESTGrammar
import Testing
@testable import GuestPassStore

/// `/rest/v1/<table>`: what only the server can show — writes refused after the statement roll back, the schema cache
/// follows `NOTIFY pgrst`, the role's statement timeout applies, numbers keep every digit. The SDK-level behaviour is
/// in `e2e/test_tables*.py`.
@Suite struct TableTests {
    static func table(
        _ client: any TestClientProtocol, _ tenant: TestTenant, _ method: HTTPRequest.Method, _ path: String, _ guest: RPCTests.Guest?,
        json: String? = nil, headers: HTTPFields = [:]
    ) async throws -> JSONResponse {
        try await client.call(method, "/rest/v1/\(path)", apiKey: tenant.publishableKey, bearer: guest?.access, json: json, headers: headers)
    }

    static let prefer = HTTPField.Name("Prefer")!

    /// A `Location` names the inserted row by its key as PostgREST writes it (`renderSimpleQuery True`), so that
    /// following it finds that row: non-ASCII text, `&`, `+` and spaces survive the query string's decoding.
    @Test func locationKeysArePercentEncodedSoThatFollowingThemWorks() throws {
        let condition = "eq.圍棋 & R+ll"
        let encoded = TableResponse.queryEncoded(condition)
        #expect(encoded == "eq.%E5%9C%8D%E6%A3%8B+%26+R%2Bll")
        #expect(try QueryGrammar.pairs(rawQuery: "k=" + encoded).first?.value == condition)
    }

    @Test func aSingularWriteOfTwoRowsIsRefusedAndRolledBack() async throws {
        try await TestService.withServedTenant(examples: true) { service, tenant, client in
            let guest = try await RPCTests.guest(client, tenant)
            let refused = try await Self.table(
                client, tenant, .post, "readings", guest, json: #"[{"kind":"palm"},{"kind":"face"}]"#,
                headers: [.accept: "application/vnd.pgrst.object+json", Self.prefer: "return=representation"])
            #expect(refused.status == .notAcceptable)
            #expect(refused.errorCode == PostgRESTCode.notSingular)
            #expect(refused.string("details") == "The result contains 2 rows")
            #expect(try await service.count("SELECT count(*) FROM public.readings WHERE user_id = $1::uuid", [guest.id]) == 0)

            let one = try await Self.table(
                client, tenant, .post, "readings", guest, json: #"{"kind":"palm"}"#,
                headers: [.accept: "application/vnd.pgrst.object+json", Self.prefer: "return=representation"])
            #expect(one.status == .created)
            #expect(one.string("kind") == "palm", "one row is answered as an object")
        }
    }

    @Test func maxAffectedUnderStrictHandlingRollsTheDeleteBack() async throws {
        try await TestService.withServedTenant(examples: true) { service, tenant, client in
            let guest = try await RPCTests.guest(client, tenant)
            let added = try await Self.table(
                client, tenant, .post, "readings", guest, json: #"[{"kind":"palm"},{"kind":"palm"},{"kind":"face"}]"#)
            #expect(added.status == .created)
            let refused = try await Self.table(
                client, tenant, .delete, "readings?kind=eq.palm", guest, headers: [Self.prefer: "handling=strict, max-affected=1"])
            #expect(refused.status == .badRequest)
            #expect(refused.errorCode == PostgRESTCode.maxAffected)
            #expect(refused.string("details") == "The query affects 2 rows")
            #expect(try await service.count("SELECT count(*) FROM public.readings WHERE user_id = $1::uuid", [guest.id]) == 3)

            let allowed = try await Self.table(
                client, tenant, .delete, "readings?kind=eq.face", guest, headers: [Self.prefer: "handling=strict, max-affected=1"])
            #expect(allowed.status == .noContent)
            #expect(allowed.headers[HTTPField.Name("Preference-Applied")!] == "handling=strict, max-affected=1")
            #expect(try await service.count("SELECT count(*) FROM public.readings WHERE user_id = $1::uuid", [guest.id]) == 2)
        }
    }

    @Test func theRolesStatementTimeoutApplies() async throws {
        try await TestService.with(examples: true) { service in
            let tenant = try await service.createTenant()
            let database = service.database.name
            try await service.owner.executeScript(
                """
                CREATE VIEW public.slow_readings WITH (security_invoker = true) AS SELECT r.*, pg_sleep(0.5)::text AS slept FROM public.readings AS r;
                GRANT SELECT ON public.slow_readings TO authenticated;
                ALTER ROLE authenticated IN DATABASE "\(database)" SET statement_timeout = '200ms';
                """)
            try await service.withServer { client in
                let guest = try await RPCTests.guest(client, tenant)
                _ = try await Self.table(client, tenant, .post, "readings", guest, json: #"{"kind":"palm"}"#)
                let cancelled = try await Self.table(client, tenant, .get, "slow_readings?select=id", guest)
                #expect(cancelled.errorCode == SQLState.queryCanceled.rawValue, "the statement ran under the role's 200 ms: \(cancelled.text)")
                #expect(cancelled.status == .serviceUnavailable)
            }
        }
    }

    @Test func numbersBeyondDoublePrecisionKeepEveryDigit() async throws {
        try await TestService.with(examples: true) { service in
            let tenant = try await service.createTenant()
            try await service.owner.executeScript(
                """
                CREATE TABLE public.measurements (id bigint PRIMARY KEY, amount numeric NOT NULL, user_id uuid NOT NULL DEFAULT auth.uid());
                ALTER TABLE public.measurements ENABLE ROW LEVEL SECURITY;
                ALTER TABLE public.measurements FORCE ROW LEVEL SECURITY;
                CREATE POLICY measurements_own ON public.measurements TO authenticated
                    USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
                GRANT SELECT, INSERT ON public.measurements TO authenticated;
                """)
            try await service.withServer { client in
                let guest = try await RPCTests.guest(client, tenant)
                let body = #"{"id":9007199254740993,"amount":12345678901234567890.12345678901234567891}"#
                let added = try await Self.table(client, tenant, .post, "measurements", guest, json: body)
                #expect(added.status == .created)
                let read = try await Self.table(client, tenant, .get, "measurements?select=id,amount&id=eq.9007199254740993", guest)
                #expect(read.text == #"[{"id":9007199254740993,"amount":12345678901234567890.12345678901234567891}]"#)
            }
        }
    }

    @Test func tablesAnAPIRoleCanWriteWithoutRowLevelSecurityAreNamed() async throws {
        try await TestService.with(examples: true) { service in
            try await service.owner.executeScript(
                "CREATE TABLE public.open_notes (id int PRIMARY KEY); GRANT INSERT ON public.open_notes TO authenticated")
            let pool = PostgresPool(configuration: service.configuration.postgres)
            let cache = SchemaCache(pool: pool, schemas: ["public"])
            try await cache.reload()
            #expect(cache.writableWithoutRowSecurity == ["public.open_notes"], "readings and the core tables have forced RLS")
            await pool.shutdown()
        }
    }
}
