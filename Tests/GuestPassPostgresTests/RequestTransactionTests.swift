import Foundation
import GuestPassPostgres
import GuestPassTestSupport
import Testing

@Suite struct RequestTransactionTests {
    static let claims = #"{"sub":"6b1c7c2e-2b0e-4f5e-9a59-0c7d6f1b8e11","role":"authenticated","device_id":"0f8fad5b-d9cb-469f-a165-70867728950e"}"#

    @Test func statementsRunAsTheRoleWithTheClaims() async throws {
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 2) }) { database, pool in
            let results = try await pool.requestTransaction(
                RequestIdentity(role: .authenticated, claimsJSON: Self.claims),
                [
                    PostgresStatement("SELECT current_user::text, auth.uid(), auth.device_id()"),
                    PostgresStatement("SELECT $1::int8 + 1", [41]),
                ]
            )
            #expect(results.count == 2)
            let row = try #require(results[0].first)
            #expect(try row.decode(String.self, at: 0) == "authenticated")
            #expect(try row.decode(UUID.self, at: 1) == UUID(uuidString: "6b1c7c2e-2b0e-4f5e-9a59-0c7d6f1b8e11"))
            #expect(try row.decode(UUID.self, at: 2) == UUID(uuidString: "0f8fad5b-d9cb-469f-a165-70867728950e"))
            #expect(try results[1].rows[0].decode(Int.self, at: 0) == 42)
        }
    }

    @Test func readOnlyRequestRefusesWrites() async throws {
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1) }) { database, pool in
            let error = try await #require(throws: PostgresError.self) {
                try await pool.requestTransaction(
                    RequestIdentity(role: .anon, claimsJSON: "{}"), readOnly: true,
                    [PostgresStatement("CREATE TEMP TABLE scratch (x int)")]
                )
            }
            #expect(error.sqlState == .readOnlySQLTransaction)
        }
    }

    /// Several identities in one transaction (`requestTransactions`): each step runs as its own role with its own
    /// claims, a setting one step makes is gone in the next (the rollback to the savepoint), and a failing step fails
    /// the batch and leaves the connection usable.
    @Test func batchedIdentitiesEachRunAsThemselvesAndLeaveNothingBehind() async throws {
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1) }) { database, pool in
            let other = #"{"sub":"00000000-0000-0000-0000-0000000000aa","role":"authenticated"}"#
            let probe = PostgresStatement("SELECT current_user::text, auth.uid()::text, current_setting('gp.step', true)")
            let mark = PostgresStatement("SELECT set_config('gp.step', 'seen', true)")
            let steps: [(identity: RequestIdentity, statements: [PostgresStatement])] = [
                (RequestIdentity(role: .authenticated, claimsJSON: Self.claims), [mark, probe]),
                (RequestIdentity(role: .anon, claimsJSON: "{}"), [probe]),
                (RequestIdentity(role: .authenticated, claimsJSON: other), [probe]),
            ]
            let answers = try await pool.requestTransactions(steps, readOnly: true)
            #expect(answers.map(\.count) == [2, 1, 1])
            let rows = try answers.map { answer in
                let row = try #require(answer.last?.first)
                return (try row.decode(String.self, at: 0), try row.decode(String?.self, at: 1), try row.decode(String?.self, at: 2))
            }
            #expect(rows[0].0 == "authenticated" && rows[0].1 == "6b1c7c2e-2b0e-4f5e-9a59-0c7d6f1b8e11" && rows[0].2 == "seen")
            #expect(rows[1].0 == "anon" && rows[1].1 == nil && rows[1].2 != "seen")
            #expect(rows[2].0 == "authenticated" && rows[2].1 == "00000000-0000-0000-0000-0000000000aa" && rows[2].2 != "seen")
            await #expect(throws: PostgresError.self) {
                _ = try await pool.requestTransactions([steps[1], (steps[2].identity, [PostgresStatement("SELECT 1 / 0")])], readOnly: true)
            }
            let again = try await pool.requestTransactions([steps[1]], readOnly: true)
            #expect(try again[0][0].rows[0].decode(String.self, at: 0) == "anon")
        }
    }

    /// Counts the round trips with libpq's own protocol trace: every message to the server (BEGIN, the settings,
    /// the work, COMMIT, one Sync) is written before the first message comes back, and exactly one
    /// ReadyForQuery answers.
    @Test func requestTransactionIsOneRoundTrip() async throws {
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1) }) { database, pool in
            let tracePath = FileManager.default.temporaryDirectory.appendingPathComponent("gp-trace-\(UUID()).log").path
            defer { try? FileManager.default.removeItem(atPath: tracePath) }
            let identity = RequestIdentity(role: .authenticated, claimsJSON: Self.claims)
            try await pool.withConnection { connection in
                try await connection.run { connection in
                    connection.startProtocolTrace(path: tracePath)
                    defer { connection.stopProtocolTrace() }
                    _ = try connection.requestTransaction(
                        identity,
                        [PostgresStatement("SELECT auth.uid()"), PostgresStatement("SELECT $1::text", ["x"]), PostgresStatement("SELECT 3")]
                    )
                }
            }
            let lines = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n")
            let messages = lines.map { $0.split(separator: "\t") }.filter { $0.count >= 3 }
            let directions = messages.map { String($0[0]) }
            let names = messages.map { String($0[2]) }
            let lastSent = try #require(directions.lastIndex(of: "F"))
            let firstReceived = try #require(directions.firstIndex(of: "B"))
            #expect(lastSent < firstReceived, "a message was sent after a reply arrived: more than one round trip")
            #expect(zip(directions, names).filter { $0 == "F" && $1 == "Sync" }.count == 1)
            #expect(zip(directions, names).filter { $0 == "B" && $1 == "ReadyForQuery" }.count == 1)
            // 6 statements: BEGIN, settings, 3 of work, COMMIT.
            #expect(zip(directions, names).filter { $0 == "F" && $1 == "Execute" }.count == 6)
        }
    }

    /// Statements marked `reusesPlan` (the framing ones among them) are parsed once per connection: the second
    /// request sends no Parse for them.
    @Test func framingStatementsArePreparedOncePerConnection() async throws {
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1) }) { database, pool in
            let tracePath = FileManager.default.temporaryDirectory.appendingPathComponent("gp-trace-\(UUID()).log").path
            defer { try? FileManager.default.removeItem(atPath: tracePath) }
            let identity = RequestIdentity(role: .authenticated, claimsJSON: Self.claims)
            let work = [PostgresStatement("SELECT auth.uid()", reusesPlan: true), PostgresStatement("SELECT $1::int8 * 2", [21])]
            try await pool.withConnection { connection in
                try await connection.run { connection in
                    _ = try connection.requestTransaction(identity, work)
                    connection.startProtocolTrace(path: tracePath)
                    defer { connection.stopProtocolTrace() }
                    let second = try connection.requestTransaction(identity, work)
                    #expect(try second[1].rows[0].decode(Int.self, at: 0) == 42)
                    #expect(try second[0].rows[0].decode(UUID.self, at: 0) == UUID(uuidString: "6b1c7c2e-2b0e-4f5e-9a59-0c7d6f1b8e11"))
                }
            }
            let lines = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n").map { $0.split(separator: "\t") }
            let parses = lines.filter { $0.count >= 3 && $0[0] == "F" && $0[2] == "Parse" }
            #expect(parses.count == 1, "only the statement without reusesPlan is parsed again")
            #expect(lines.filter { $0.count >= 3 && $0[0] == "F" && $0[2] == "Execute" }.count == 5)
        }
    }

    /// A statement whose text is a request's shape (`reusesPlanWhileRoom`, a table request's) is prepared once per
    /// connection too, but only while fewer than half the session's limit (256) are: many shapes leave room for the
    /// fixed statements, and a shape past that runs unnamed with the same answer.
    @Test func shapedStatementsArePreparedOnlyWhileThereIsRoom() async throws {
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1) }) { database, pool in
            let identity = RequestIdentity(role: .authenticated, claimsJSON: Self.claims)
            @Sendable func shaped(_ n: Int) -> PostgresStatement {
                var statement = PostgresStatement("SELECT \(n)::int8 + $1::int8", [1])
                statement.reusesPlanWhileRoom = true
                return statement
            }
            let preparedCount = PostgresStatement("SELECT count(*) FROM pg_catalog.pg_prepared_statements", reusesPlan: true)
            try await pool.withConnection { connection in
                try await connection.run { connection in
                    for n in 0..<200 {
                        let result = try connection.requestTransaction(identity, [shaped(n)])
                        #expect(try result[0].rows[0].decode(Int.self, at: 0) == n + 1)
                    }
                    // BEGIN, the identity frame and COMMIT, then shapes until 128 are prepared; the count is fixed.
                    #expect(try connection.requestTransaction(identity, [preparedCount])[0].rows[0].decode(Int.self, at: 0) == 129)
                    #expect(try connection.requestTransaction(identity, [shaped(0), shaped(199)])[1].rows[0].decode(Int.self, at: 0) == 200)
                    #expect(try connection.requestTransaction(identity, [preparedCount])[0].rows[0].decode(Int.self, at: 0) == 129)
                }
            }
        }
    }

    /// Behind PgBouncer's transaction pooling (`.transaction`) the next transaction may run on another server
    /// session, so nothing may be left in one: no statement is prepared by name, no setting comes from the startup
    /// packet, and every request transaction carries the settings itself. The session mode prepares and sets once.
    @Test func transactionPoolModeLeavesNothingInTheSession() async throws {
        let settings = ["guestpass.signup_ip_burst": "7"]
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1, poolMode: .transaction, sessionSettings: settings) }) {
            database, pool in
            let identity = RequestIdentity(role: .authenticated, claimsJSON: Self.claims)
            let probe = PostgresStatement(
                "SELECT current_setting('guestpass.signup_ip_burst', true), current_setting('statement_timeout'), auth.uid()", reusesPlan: true)
            for _ in 0..<3 {
                let row = try #require(try await pool.requestTransaction(identity, [probe]).first?.first)
                #expect(try row.decode(String?.self, at: 0) == "7")
                #expect(try row.decode(String.self, at: 1) == "15s")
                #expect(try row.decode(UUID.self, at: 2) == UUID(uuidString: "6b1c7c2e-2b0e-4f5e-9a59-0c7d6f1b8e11"))
            }
            let session = try await pool.execute(
                "SELECT coalesce(current_setting('guestpass.signup_ip_burst', true), ''), current_setting('statement_timeout'), "
                    + "(SELECT count(*)::int8 FROM pg_prepared_statements)"
            ).rows[0]
            #expect(try session.decode(String.self, at: 0) == "", "a setting outlived its transaction")
            #expect(try session.decode(String.self, at: 1) == "0", "the statement timeout came from the session")
            #expect(try session.decode(Int.self, at: 2) == 0, "a statement was prepared by name")

            try await withShutdown(database.loginPool(maxConnections: 1, sessionSettings: settings)) { sessionPool in
                _ = try await sessionPool.requestTransaction(identity, [probe])
                let row = try await sessionPool.execute(
                    "SELECT current_setting('guestpass.signup_ip_burst', true), (SELECT count(*)::int8 FROM pg_prepared_statements)"
                ).rows[0]
                #expect(try row.decode(String?.self, at: 0) == "7")
                #expect(try row.decode(Int.self, at: 1) >= 3, "BEGIN, the settings and the probe are prepared once per session")
            }
        }
    }
}
