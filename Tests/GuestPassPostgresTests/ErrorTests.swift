import GuestPassPostgres
import GuestPassTestSupport
import Testing

/// A session the server ended fails as a lost connection or with the server's own unavailability SQLSTATE (57P01),
/// which the HTTP layer answers 503; never as a protocol violation, which it answers 500.
private func expectLost(_ error: PostgresError, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(error.kind != .protocolViolation, "\(error)", sourceLocation: sourceLocation)
    #expect(error.isConnectionError || error.sqlState?.isUnavailability == true, "\(error)", sourceLocation: sourceLocation)
}

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

    /// A session the server ends mid-statement (`pg_terminate_backend`, as a shutdown does) fails as a lost connection
    /// or with the server's own 57P01, never as a protocol violation, which the HTTP layer would answer 500, not 503.
    @Test(arguments: [false, true]) func aSessionTheServerEndsMidStatementIsLost(pipelined: Bool) async throws {
        try await TestDatabase.with(migrated: false, pool: { $0.ownerPool(maxConnections: 2) }) { database, pool in
            async let failure: PostgresError? = pool.withConnection { connection in
                try await connection.run { connection -> PostgresError? in
                    do {
                        if pipelined {
                            _ = try connection.pipeline([PostgresStatement("SELECT pg_sleep(30)"), PostgresStatement("SELECT 1")])
                        } else {
                            _ = try connection.execute("SELECT pg_sleep(30)")
                        }
                        return nil
                    } catch let error as PostgresError {
                        return error
                    }
                }
            }
            let terminate = """
                SELECT (count(*) FILTER (WHERE pg_terminate_backend(pid)))::int FROM pg_stat_activity
                WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep(30)%' AND pid <> pg_backend_pid()
                """
            let ended = try await eventually(timeout: .seconds(10)) { try await pool.execute(terminate).rows[0].decode(Int.self, at: 0) == 1 }
            let error = try #require(await failure, "the statement fails")
            try #require(ended)
            expectLost(error)
        }
    }

    /// A connection whose session the server ended while it sat idle (a restart; the pool's liveness probe can pass just
    /// before) fails its next statement as a lost connection, never as a protocol violation.
    @Test(arguments: [false, true]) func anIdleSessionTheServerEndedIsLost(pipelined: Bool) async throws {
        try await TestDatabase.with(migrated: false, pool: { $0.ownerPool(maxConnections: 1) }) { database, pool in
            let connection = try PostgresConnection(configuration: PostgresConfiguration(url: database.ownerURL))
            let backend = try connection.execute("SELECT pg_backend_pid()").rows[0].decode(Int.self, at: 0)
            let terminated = try await pool.execute("SELECT pg_terminate_backend($1::int)", [backend]).rows[0].decode(Bool.self, at: 0)
            try #require(terminated)
            try await Task.sleep(for: .milliseconds(100))  // the server's goodbye is in flight; nothing waits on it
            let error = try #require(throws: PostgresError.self) {
                if pipelined {
                    _ = try connection.pipeline([PostgresStatement("SELECT 1"), PostgresStatement("SELECT 2")])
                } else {
                    _ = try connection.execute("SELECT 1")
                }
            }
            expectLost(error)
        }
    }

    /// A session that ends right after its last statement (here it terminates itself; a shutdown can land there too)
    /// fails as a lost connection or the server's 57P01, never as a protocol violation.
    @Test(arguments: [false, true]) func aSessionEndedAfterItsLastStatementIsLost(framed: Bool) async throws {
        try await TestDatabase.with(migrated: false, pool: { $0.ownerPool(maxConnections: 1) }) { database, _ in
            let connection = try PostgresConnection(configuration: PostgresConfiguration(url: database.ownerURL))
            let statements =
                (framed ? [PostgresStatement("BEGIN")] : []) + [PostgresStatement("SELECT pg_terminate_backend(pg_backend_pid())")]
                + (framed ? [PostgresStatement("COMMIT")] : [])
            let error = try #require(throws: PostgresError.self) { _ = try connection.pipeline(statements) }
            expectLost(error)
        }
    }
}
