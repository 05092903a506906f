import GuestPassPostgres
import GuestPassTestSupport
import Testing

/// Server errors surface as typed values with their SQLSTATE and diagnostic fields.
@Suite struct ErrorTests {
    @Test func uniqueViolationCarriesSQLStateAndConstraint() async throws {
        try await TestDatabase.with(migrated: false, pool: { $0.ownerPool() }) { database, pool in
            try await pool.execute("CREATE TABLE public.things (id int PRIMARY KEY, label text CONSTRAINT things_label_key UNIQUE)")
            try await pool.execute("INSERT INTO public.things VALUES ($1, $2)", [1, "same"])
            let error = try await #require(throws: PostgresError.self) {
                try await pool.execute("INSERT INTO public.things VALUES ($1, $2)", [2, "same"])
            }
            #expect(error.kind == .server)
            #expect(error.sqlState == .uniqueViolation)
            #expect(error.sqlState?.rawValue == "23505")
            #expect(error.constraint == "things_label_key")
            #expect(error.table == "things")
            #expect(error.schema == "public")
            #expect(error.detail?.contains("(label)=(same)") == true)
            // The failed statement did not break the pool: the next one works on the same connections.
            #expect(try await pool.execute("SELECT count(*) FROM public.things").rows[0].decode(Int.self, at: 0) == 1)
        }
    }

    @Test func raisedExceptionKeepsMessageDetailAndHint() async throws {
        try await TestDatabase.with(migrated: false, pool: { $0.ownerPool() }) { database, pool in
            let error = try await #require(throws: PostgresError.self) {
                try await pool.execute(
                    "DO $$ BEGIN RAISE EXCEPTION 'quota exceeded' USING ERRCODE = 'PT429', DETAIL = 'd1', HINT = 'h1'; END $$"
                )
            }
            #expect(error.sqlState == SQLState("PT429"))
            #expect(error.message == "quota exceeded")
            #expect(error.detail == "d1")
            #expect(error.hint == "h1")
        }
    }

    @Test func statementTimeoutIsQueryCanceled() async throws {
        try await TestDatabase.with(
            migrated: false,
            pool: { database in
                var configuration = PostgresConfiguration(url: database.ownerURL)
                configuration.statementTimeout = .milliseconds(200)
                return PostgresPool(configuration: configuration)
            }
        ) { database, pool in
            let error = try await #require(throws: PostgresError.self) { try await pool.execute("SELECT pg_sleep(5)") }
            #expect(error.sqlState == .queryCanceled)
            #expect(try await pool.execute("SELECT 1").rows[0].decode(Int.self, at: 0) == 1)
        }
    }

    @Test func failedConnectIsATypedErrorNotACrash() async throws {
        var configuration = PostgresConfiguration(url: "postgresql://nobody@127.0.0.1:1/none")
        configuration.connectTimeout = .seconds(2)
        try await withShutdown(PostgresPool(configuration: configuration)) { pool in
            for _ in 0..<3 {
                let error = try await #require(throws: PostgresError.self) { try await pool.execute("SELECT 1") }
                #expect(error.kind == .connectionFailed)
            }
            // Failed connects gave their capacity back.
            #expect(await pool.statistics.open == 0)
        }
    }
}
