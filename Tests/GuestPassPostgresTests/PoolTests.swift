import Foundation
import GuestPassPostgres
import GuestPassTestSupport
import Testing

/// The session's role and request claims (`<none>` when unset): what a borrower that failed part-way left behind.
private let sessionStateQuery = "SELECT current_user::text, coalesce(nullif(current_setting('request.jwt.claims', true), ''), '<none>')"

/// Records an issue unless `row`, of `sessionStateQuery`, shows a clean session: the login role and no claims.
private func expectLoginRoleWithoutClaims(_ row: PostgresRow, sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(try row.decode(String.self, at: 0) == "guestpass_authenticator", sourceLocation: sourceLocation)
    #expect(try row.decode(String.self, at: 1) == "<none>", sourceLocation: sourceLocation)
}

@Suite struct PoolTests {
    @Test func twoHundredConcurrentTasksOverEightConnectionsAllSucceed() async throws {
        // The claim is that every task gets a connection, not how fast: the whole suite shares two CPUs.
        try await TestDatabase.with(migrated: false, pool: { $0.ownerPool(maxConnections: 8, acquireTimeout: .seconds(60)) }) { database, pool in
            let outcomes = await withTaskGroup(of: Result<(Int, Int32), any Error>.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        do {
                            let row = try await pool.execute("SELECT $1::int8, pg_backend_pid(), pg_sleep(0.005)", [index]).rows[0]
                            return .success((try row.decode(Int.self, at: 0), try row.decode(Int32.self, at: 1)))
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                var all: [Result<(Int, Int32), any Error>] = []
                for await outcome in group { all.append(outcome) }
                return all
            }
            let values: [(Int, Int32)] = try outcomes.map { try $0.get() }
            #expect(values.count == 200)
            #expect(Set(values.map(\.0)) == Set(0..<200))
            let backends = Set(values.map(\.1))
            #expect(backends.count <= 8)
            #expect(await pool.statistics.open <= 8)
        }
    }

    @Test func acquireTimesOutWhenEveryConnectionIsBusy() async throws {
        try await TestDatabase.with(migrated: false, pool: { $0.ownerPool(maxConnections: 1, acquireTimeout: .milliseconds(200)) }) {
            database, pool in
            async let long: PostgresResult = pool.execute("SELECT pg_sleep(5)")
            // The one connection is busy once the long statement runs on the server (5 s: on a loaded machine the probe
            // below can take a second or two to see it).
            let busy = try await withShutdown(database.ownerPool(maxConnections: 1)) { probe in
                try await eventually(timeout: .seconds(10)) {
                    try await probe.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query = 'SELECT pg_sleep(5)'"
                    ).rows[0].decode(Int.self, at: 0) == 1
                }
            }
            try #require(busy)
            let error = try await #require(throws: PostgresError.self) { try await pool.execute("SELECT 1") }
            #expect(error.kind == .acquireTimeout)
            _ = try await long
            #expect(try await pool.execute("SELECT 1").rows[0].decode(Int.self, at: 0) == 1)
        }
    }

    /// A borrower that leaves a transaction open (with role and claims set) hands back a connection the next borrower
    /// finds clean: no transaction, the login role, no claims.
    @Test func connectionHandedBackMidTransactionIsCleanForTheNextBorrower() async throws {
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1) }) { database, pool in
            let firstPID = try await pool.withConnection { connection in
                try await connection.execute("BEGIN")
                try await connection.execute(
                    "SELECT set_config('role', 'authenticated', true), set_config('request.jwt.claims', $1, true)",
                    [#"{"sub":"6b1c7c2e-2b0e-4f5e-9a59-0c7d6f1b8e11","role":"authenticated"}"#]
                )
                let inside = try await connection.execute("SELECT current_user::text, auth.uid()::text").rows[0]
                #expect(try inside.decode(String.self, at: 0) == "authenticated")
                #expect(try inside.decode(String.self, at: 1) == "6b1c7c2e-2b0e-4f5e-9a59-0c7d6f1b8e11")
                return connection.backendPID  // returned without COMMIT
            }
            // A second borrower whose transaction failed part-way.
            _ = try? await pool.withConnection { connection in
                try await connection.execute("BEGIN")
                try await connection.execute("SELECT set_config('role', 'anon', true)")
                try await connection.execute("SELECT 1/0")
            }
            try await pool.withConnection { connection in
                #expect(connection.backendPID == firstPID, "pool of one reuses the same session")
                #expect(try await connection.run { $0.transactionStatus } == .idle, "no leftover transaction")
                try expectLoginRoleWithoutClaims(try await connection.execute(sessionStateQuery).rows[0])
            }
        }
    }

    /// A request that failed mid-transaction (one round trip, aborted pipeline) leaves a clean session behind.
    @Test func failedRequestTransactionLeavesCleanSession() async throws {
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1) }) { database, pool in
            let identity = RequestIdentity(role: .authenticated, claimsJSON: #"{"sub":"6b1c7c2e-2b0e-4f5e-9a59-0c7d6f1b8e11"}"#)
            let error = try await #require(throws: PostgresError.self) {
                try await pool.requestTransaction(identity, [PostgresStatement("SELECT 1/0"), PostgresStatement("SELECT 2")])
            }
            #expect(error.sqlState == SQLState("22012"))
            try expectLoginRoleWithoutClaims(try await pool.execute(sessionStateQuery).rows[0])
        }
    }

    /// Without the role switch the login role reads nothing: 42501.
    @Test func loginRoleWithoutRoleSwitchIsDenied() async throws {
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1) }) { database, pool in
            let error = try await #require(throws: PostgresError.self) { try await pool.execute("SELECT count(*) FROM public.users") }
            #expect(error.sqlState == .insufficientPrivilege)
        }
    }
}
