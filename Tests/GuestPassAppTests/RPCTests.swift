import Foundation
@testable import GuestPassApp
import GuestPassPostgres
import GuestPassTestSupport
import HTTPTypes
import HummingbirdTesting
import Testing
import GuestPassJSON
@testable import GuestPassStore

/// `/rest/v1/rpc` against the example schema: shapes, tenant isolation through RLS, refused targets, error mapping.
@Suite struct RPCTests {
    struct Guest {
        let id: String
        let access: String
    }

    static func guest(_ client: any TestClientProtocol, _ tenant: TestTenant) async throws -> Guest {
        try guest(signedUp: await client.signUp(tenant, deviceSecret: UUID().uuidString))
    }

    static func guest(signedUp session: JSONResponse) throws -> Guest {
        Guest(id: try #require(session.user?["id"]?.stringValue), access: try #require(session.string("access_token")))
    }

    static func rpc(
        _ client: any TestClientProtocol, _ tenant: TestTenant, _ function: String, _ guest: Guest?, _ body: String = "{}",
        method: HTTPRequest.Method = .post, headers: HTTPFields = [:]
    ) async throws -> JSONResponse {
        try await client.call(
            method, "/rest/v1/rpc/\(function)", apiKey: tenant.publishableKey, bearer: guest?.access,
            json: method == .post ? body : nil, headers: headers
        )
    }

    @Test func guestsSeeAndChangeOnlyTheirOwnRows() async throws {
        try await TestService.with(examples: true) { service in
            let tenant = try await service.createTenant()

            try await service.withServer { client in
                let a = try await Self.guest(client, tenant)
                let b = try await Self.guest(client, tenant)

                // Shapes: composite → object, setof → array, scalar → bare JSON, jsonb → as is, void → 204.
                let added = try await Self.rpc(client, tenant, "add_reading", a, #"{"p_kind":"palm","p_content":{"lines":3}}"#)
                #expect(added.status == .ok)
                #expect(added["user_id"] == .string(a.id))
                #expect(added["content"] == .object(["lines": .number(3)]))
                let aReading = try #require(added.string("id"))
                _ = try await Self.rpc(client, tenant, "add_reading", a, #"{"p_kind":"face"}"#)
                let bAdded = try await Self.rpc(client, tenant, "add_reading", b, #"{"p_kind":"coffee","p_content":{"cup":"espresso"}}"#)
                let bReading = try #require(bAdded.string("id"))

                let list = try await client.call(.post, "/rest/v1/rpc/list_readings", apiKey: tenant.publishableKey, bearer: a.access, json: "{}")
                let listed = try JSONValue.parse(list.text)
                guard case .array(let rows) = listed else {
                    Issue.record("list_readings must answer an array: \(list.text)")
                    return
                }
                #expect(rows.count == 2)
                #expect(rows.allSatisfy { $0.objectValue?["user_id"] == .string(a.id) })

                let count = try await Self.rpc(client, tenant, "count_readings", a)
                #expect(count.text == "2")
                let summary = try await Self.rpc(client, tenant, "readings_summary", a)
                #expect(summary["total"] == .number(2))

                // Every attempt by A on B's rows fails or does nothing.
                let foreign = try await Self.rpc(client, tenant, "get_user_readings", a, #"{"p_user_id":"\#(b.id)"}"#)
                #expect(foreign.status == .forbidden)
                #expect(foreign.errorCode == SQLState.insufficientPrivilege.rawValue)
                let deleteB = try await Self.rpc(client, tenant, "delete_reading", a, #"{"p_id":"\#(bReading)"}"#)
                #expect(deleteB.status == .noContent)
                let asB = try await Self.rpc(client, tenant, "add_reading", a, #"{"p_kind":"face","user_id":"\#(b.id)"}"#)
                #expect(asB.status == .notFound, "no signature takes a user id: nobody can insert as someone else")

                // GET runs read-only with query-string arguments.
                let filtered = try await client.call(.get, "/rest/v1/rpc/list_readings?p_kind=palm", apiKey: tenant.publishableKey, bearer: a.access)
                #expect(filtered.status == .ok)
                #expect((try JSONValue.parse(filtered.text)).arrayMembers.count == 1)
                let writeViaGet = try await client.call(.get, "/rest/v1/rpc/add_reading?p_kind=face", apiKey: tenant.publishableKey, bearer: a.access)
                #expect(writeViaGet.status == .methodNotAllowed)

                let deleteOwn = try await Self.rpc(client, tenant, "delete_reading", a, #"{"p_id":"\#(aReading)"}"#)
                #expect(deleteOwn.status == .noContent)
                #expect(deleteOwn.text.isEmpty)
            }
            // B's row is untouched; A lost only its own deleted reading.
            #expect(try await service.count("SELECT count(*) FROM public.readings WHERE kind = 'coffee' AND content = '{\"cup\":\"espresso\"}'") == 1)
            #expect(try await service.count("SELECT count(*) FROM public.readings") == 2)
        }
    }

    /// A JSON array for an array parameter becomes a PostgreSQL array literal whose quotes and backslashes are
    /// escaped: every element arrives as sent, null as NULL.
    @Test func arrayArgumentsArriveAsSent() async throws {
        try await TestService.with(examples: true) { service in
            try await service.owner.execute(
                "CREATE FUNCTION public.test_echo(p_items text[]) RETURNS jsonb LANGUAGE sql AS 'SELECT to_jsonb(p_items)'"
            )
            try await service.owner.execute("GRANT EXECUTE ON FUNCTION public.test_echo(text[]) TO authenticated")
            let tenant = try await service.createTenant()
            try await service.withServer { client in
                let guest = try await Self.guest(client, tenant)
                let body = #"{"p_items":["a\"b","c\\d","{x,y}","plain",null,""]}"#
                let echoed = try await Self.rpc(client, tenant, "test_echo", guest, body)
                #expect(echoed.status == .ok, "\(echoed.text)")
                #expect(try JSONValue.parse(echoed.text) == JSONValue.parse(#"["a\"b","c\\d","{x,y}","plain",null,""]"#))
            }
        }
    }

    /// A JSON number reaches PostgreSQL as the text it was written with, and results are PostgreSQL's own JSON: no
    /// digit is lost to a `Double` either way (`echo_bigint` and `echo_numeric` of sql/examples return their argument).
    @Test func numbersArriveAndReturnDigitForDigit() async throws {
        try await TestService.withServedTenant(examples: true) { service, tenant, client in
            let guest = try await Self.guest(client, tenant)
            let bigint = try await Self.rpc(client, tenant, "echo_bigint", guest, #"{"p": 9007199254740993}"#)
            #expect(bigint.status == .ok, "\(bigint.text)")
            #expect(bigint.text == "9007199254740993")
            let viaGet = try await client.call(
                .get, "/rest/v1/rpc/echo_bigint?p=9007199254740993", apiKey: tenant.publishableKey, bearer: guest.access)
            #expect(viaGet.text == "9007199254740993")
            let smallest = try await Self.rpc(client, tenant, "echo_bigint", guest, #"{"p":-9223372036854775808}"#)
            #expect(smallest.text == "-9223372036854775808")

            for numeric in ["12345678901234567890.12345678901234567890", "0.1000000000000000055511151231257827", "1.50", "0.000"] {
                let echoed = try await Self.rpc(client, tenant, "echo_numeric", guest, #"{"p":\#(numeric)}"#)
                #expect(echoed.text == numeric)
            }
            let exponent = try await Self.rpc(client, tenant, "echo_numeric", guest, #"{"p":1.5E+20}"#)
            #expect(exponent.text == "150000000000000000000", "PostgreSQL writes numeric in plain decimal")

            // Inside a jsonb argument too.
            let added = try await Self.rpc(
                client, tenant, "add_reading", guest, #"{"p_kind":"palm","p_content":{"n":9007199254740993,"x":1.50}}"#)
            #expect(added.status == .ok, "\(added.text)")
            #expect(added.text.contains("9007199254740993") && added.text.contains("1.50"), "\(added.text)")
        }
    }

    @Test func serviceRoleSeesItsOwnAppOnly() async throws {
        try await TestService.with(examples: true) { service in
            let x = try await service.createTenant(name: "x")
            let y = try await service.createTenant(name: "y")

            try await service.withServer { client in
                for tenant in [x, x, y] {
                    let guest = try await Self.guest(client, tenant)
                    _ = try await Self.rpc(client, tenant, "add_reading", guest, #"{"p_kind":"face"}"#)
                }
                let backendX = try await client.call(.post, "/rest/v1/rpc/list_readings", apiKey: x.secretKey, bearer: x.secretKey, json: "{}")
                #expect(backendX.status == .ok)
                #expect((try JSONValue.parse(backendX.text)).arrayMembers.count == 2)
                let backendY = try await client.call(.post, "/rest/v1/rpc/list_readings", apiKey: y.secretKey, json: "{}")
                #expect((try JSONValue.parse(backendY.text)).arrayMembers.count == 1)
                // Anonymous callers get nothing: list_readings is not granted to anon.
                let anonymous = try await client.call(.post, "/rest/v1/rpc/list_readings", apiKey: x.publishableKey, json: "{}")
                #expect(anonymous.status == .unauthorized)
            }
        }
    }

    @Test func internalFunctionsAndSchemasAreUnreachable() async throws {
        try await TestService.withServedTenant(examples: true) { service, tenant, client in
            let guest = try await Self.guest(client, tenant)
            let spoof = #"{"setting_name":"request.jwt.claims","new_value":"{\"sub\":\"00000000-0000-4000-8000-000000000000\"}","is_local":true}"#
            for (function, body) in [
                ("set_config", spoof), ("current_setting", #"{"setting_name":"request.jwt.claims"}"#), ("pg_sleep", #"{"seconds":1}"#),
                ("version", "{}"), ("uid", "{}"), ("sign_out", #"{"p_scope":"global"}"#), ("sign_up_guest", "{}"),
                ("resolve_api_key", #"{"p_key_hash":"x"}"#), ("take_rate_limit", "{}"),
            ] {
                let response = try await Self.rpc(client, tenant, function, guest, body)
                #expect(response.status == .notFound, "\(function) must not be reachable")
                #expect(response.errorCode == PostgRESTCode.functionNotFound)
                #expect(response.body.keys.sorted() == ["code", "details", "hint", "message"])
            }
            for schema in ["pg_catalog", "auth", "guestpass", "guestpass_server"] {
                let response = try await Self.rpc(
                    client, tenant, "uid", guest, headers: [HTTPField.Name("Content-Profile")!: schema]
                )
                #expect(response.status == .notAcceptable, "schema \(schema) must not be reachable")
            }
            // A function granted only to authenticated, called without a token: 401 with WWW-Authenticate.
            let anonymous = try await Self.rpc(client, tenant, "add_reading", nil, #"{"p_kind":"face"}"#)
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.headers[.wwwAuthenticate] != nil)
            #expect(anonymous.errorCode == SQLState.insufficientPrivilege.rawValue)
            let badToken = try await client.call(.post, "/rest/v1/rpc/count_readings", apiKey: tenant.publishableKey, bearer: "x.y.z", json: "{}")
            #expect(badToken.status == .unauthorized)
            #expect(badToken.headers[.wwwAuthenticate] != nil)
        }
    }

    @Test func errorsUsePostgRESTShapeAndStatus() async throws {
        try await TestService.withServedTenant(examples: true) { service, tenant, client in
            let guest = try await Self.guest(client, tenant)
            let custom = try await Self.rpc(client, tenant, "fail_with", guest, #"{"p_kind":"custom"}"#)
            #expect(custom.status.code == 402)
            #expect(custom.errorCode == "PT402")
            #expect(custom.string("message") == "custom failure")
            #expect(custom.string("details") == "d")
            #expect(custom.string("hint") == "h")
            let plain = try await Self.rpc(client, tenant, "fail_with", guest, #"{"p_kind":"plain"}"#)
            #expect(plain.status == .badRequest)
            #expect(plain.errorCode == SQLState.raiseException.rawValue)
            #expect(plain.body["details"] == .null)
            let unique = try await Self.rpc(client, tenant, "fail_with", guest, #"{"p_kind":"unique"}"#)
            #expect(unique.status == .conflict)
            let badUUID = try await Self.rpc(client, tenant, "delete_reading", guest, #"{"p_id":"not-a-uuid"}"#)
            #expect(badUUID.status == .badRequest)
            #expect(badUUID.errorCode == SQLState.invalidTextRepresentation.rawValue)
            let badKind = try await Self.rpc(client, tenant, "add_reading", guest, #"{"p_kind":"tarot"}"#)
            #expect(badKind.status == .badRequest)
            let missing = try await Self.rpc(client, tenant, "add_reading", guest, "{}")
            #expect(missing.status == .notFound)
            #expect(missing.errorCode == PostgRESTCode.functionNotFound)
            let notJSON = try await Self.rpc(client, tenant, "count_readings", guest, "{oops")
            #expect(notJSON.status == .badRequest)
            let array = try await Self.rpc(client, tenant, "count_readings", guest, "[]")
            #expect(array.status == .badRequest)
        }
    }

    /// Repeats `call` while it answers 503, for up to 10 s, and returns its last answer.
    static func retriedWhileUnavailable(_ call: () async throws -> JSONResponse) async throws -> JSONResponse {
        var response = try await call()
        let deadline = ContinuousClock.now + .seconds(10)
        while response.status == .serviceUnavailable, ContinuousClock.now < deadline {
            response = try await call()
        }
        return response
    }

    /// A request that waits past the pool's acquire timeout is a 503 in PostgREST's shape (`PGRST003`), not GoTrue's.
    @Test func poolAcquireTimeoutIsA503InPostgRESTShape() async throws {
        try await TestService.with(examples: true) { configured in
            var service = configured
            service.configuration.databasePoolSize = 1
            service.configuration.databaseAcquireTimeout = .seconds(1)
            try await service.owner.execute(
                "CREATE FUNCTION public.test_sleep(p_seconds double precision) RETURNS integer LANGUAGE sql AS 'SELECT 1 FROM pg_sleep(p_seconds)'"
            )
            try await service.owner.execute("GRANT EXECUTE ON FUNCTION public.test_sleep(double precision) TO authenticated")
            let tenant = try await service.createTenant()
            let owner = service.owner
            try await service.withServer { client in
                // The server's own background work (the Realtime poll, the schema cache load) borrows the one
                // connection too; on a loaded machine it can hold it past the 1 s timeout, so the calls that need the
                // connection are retried until served. Only the call made while test_sleep holds it must be refused.
                // (The retry looks at the status: `#require` records a failure even when its error is caught.)
                let guest = try Self.guest(
                    signedUp: await Self.retriedWhileUnavailable { try await client.signUp(tenant, deviceSecret: UUID().uuidString) })
                let served: @Sendable (String) async throws -> JSONResponse = { body in
                    try await Self.retriedWhileUnavailable { try await Self.rpc(client, tenant, "test_sleep", guest, body) }
                }
                #expect(try await served(#"{"p_seconds":0}"#).status == .ok)
                async let holder = served(#"{"p_seconds":3}"#)
                // The one connection is taken once test_sleep runs on the server.
                try #require(
                    try await eventually(timeout: .seconds(10)) {
                        try await owner.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE '%test_sleep%' AND pid <> pg_backend_pid()"
                        ).rows[0].decode(Int.self, at: 0) == 1
                    })
                let waited = try await Self.rpc(client, tenant, "get_quota", guest)
                #expect(waited.status == .serviceUnavailable)
                #expect(waited.errorCode == PostgRESTCode.poolTimeout)
                #expect(waited.body.keys.sorted() == ["code", "details", "hint", "message"], "PostgREST's shape: \(waited.text)")
                #expect(try await holder.status == .ok)
            }
        }
    }

    /// A database that is down is a 503 in PostgREST's shape (`PGRST000`) under /rest/v1 and GoTrue's under /auth/v1.
    @Test func databaseDownIsA503InEachGroupsShape() async throws {
        try await TestService.with(examples: true) { healthy in
            let tenant = try await healthy.createTenant()
            var service = healthy
            service.configuration.databaseURL = "postgresql://guestpass_authenticator@127.0.0.1:1/nowhere?connect_timeout=1"
            let down = service
            try await down.withServer { client in
                let rpc = try await Self.rpc(client, tenant, "get_quota", nil)
                #expect(rpc.status == .serviceUnavailable)
                #expect(rpc.errorCode == PostgRESTCode.databaseUnreachable)
                #expect(rpc.body.keys.sorted() == ["code", "details", "hint", "message"], "PostgREST's shape: \(rpc.text)")
                let signUp = try await client.signUp(tenant)
                #expect(signUp.status == .serviceUnavailable)
                #expect(signUp.errorCode == GoTrueCode.databaseUnavailable)
                #expect(signUp.body.keys.sorted() == ["code", "message"], "GoTrue's shape: \(signUp.text)")
            }
        }
    }

    @Test func newFunctionsAreCallableWithoutARestart() async throws {
        try await TestService.withServedTenant(examples: true) { service, tenant, client in
            let guest = try await Self.guest(client, tenant)
            #expect(try await Self.rpc(client, tenant, "echo_twice", guest, #"{"p_text":"hi"}"#).status == .notFound)
            try await service.owner.execute(
                """
                CREATE FUNCTION public.echo_twice(p_text text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT p_text || p_text $$;
                """
            )
            try await service.owner.execute("GRANT EXECUTE ON FUNCTION public.echo_twice(text) TO authenticated")
            // Unknown names reload the catalog at most once a second: the new function appears within that.
            let appeared = try await eventually(timeout: .seconds(5)) {
                try await Self.rpc(client, tenant, "echo_twice", guest, #"{"p_text":"hi"}"#).status == .ok
            }
            #expect(appeared)
            let echoed = try await Self.rpc(client, tenant, "echo_twice", guest, #"{"p_text":"hi"}"#)
            #expect(echoed.text == #""hihi""#)
        }
    }
}
