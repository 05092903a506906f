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
}
