import Foundation
import GuestPassTestSupport
import NIOConcurrencyHelpers
import NIOPosix
import Testing

@testable import GuestPassPostgres

/// Request transactions and single statements wait for PostgreSQL on the pool's `PostgresSocketWaiter`, not on a pool
/// thread: they finish
/// while every pool thread is held, keep each answer with its own caller under concurrency, are still one round trip,
/// and time out on a silent server.
@Suite struct SocketWaiterTests {
    static let claims = #"{"sub":"6b1c7c2e-2b0e-4f5e-9a59-0c7d6f1b8e11","role":"authenticated"}"#

    /// Runs `body`, failing the test if it takes longer than `limit` (a hang in the old design).
    static func within<R: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> R) async throws -> R {
        try await withThrowingTaskGroup(of: R?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            let first = try await group.next()!
            group.cancelAll()
            return try #require(first, "still waiting after \(limit)")
        }
    }

    @Test func transactionsFinishWhileEveryPoolThreadIsHeld() async throws {
        // Twenty callers share two connections: on a loaded machine one may wait longer than the default 5 s for its turn.
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 2, acquireTimeout: .seconds(60)) }) { database, pool in
            let identity = RequestIdentity(role: .authenticated, claimsJSON: Self.claims)
            // Both connections open (two overlapping transactions), so that nothing below needs a thread to connect.
            async let first = pool.requestTransaction(identity, [PostgresStatement("SELECT pg_sleep(0.3)")])
            async let second = pool.requestTransaction(identity, [PostgresStatement("SELECT pg_sleep(0.3)")])
            _ = try await (first, second)
            #expect(await pool.statistics.open == 2)
            // Every pool thread blocked until the end of the test.
            let release = ConditionLock(value: false)
            for _ in 0..<2 {
                pool.threadPool.submit { _ in
                    release.lock(whenValue: true)
                    release.unlock()
                }
            }
            defer {
                release.lock()
                release.unlock(withValue: true)
            }
            let sum = try await Self.within(.seconds(60)) {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<20 {
                        group.addTask {
                            // Request transactions and single statements alike.
                            guard index.isMultiple(of: 2) else {
                                return try await pool.execute("SELECT $1::int8", [index]).rows[0].decode(Int.self, at: 0)
                            }
                            return try await pool.requestTransaction(identity, [PostgresStatement("SELECT $1::int8", [index])])[0].rows[0].decode(
                                Int.self, at: 0)
                        }
                    }
                    return try await group.reduce(0, +)
                }
            }
            #expect(sum == (0..<20).reduce(0, +))
            // A statement's error is the server's, and the connection serves the next one.
            let error = try await #require(throws: PostgresError.self) {
                try await Self.within(.seconds(20)) { try await pool.execute("SELECT 'x'::int") }
            }
            #expect(error.sqlState == .invalidTextRepresentation)
            #expect(try await Self.within(.seconds(20)) { try await pool.execute("SELECT 5").rows[0].decode(Int.self, at: 0) } == 5)
        }
    }

    @Test func concurrentTransactionsEachGetTheirOwnAnswer() async throws {
        // The claim is that no answer reaches another caller, not how fast: the whole suite shares two CPUs.
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 4, acquireTimeout: .seconds(120)) }) { database, pool in
            let answers = try await withThrowingTaskGroup(of: (Int, Int, UUID?).self) { group in
                for index in 0..<120 {
                    group.addTask {
                        let user = UUID()
                        let identity = RequestIdentity(
                            role: .authenticated, claimsJSON: #"{"sub":"\#(user.uuidString.lowercased())","role":"authenticated"}"#)
                        let results = try await pool.requestTransaction(
                            identity, [PostgresStatement("SELECT $1::int8, auth.uid()", [index]), PostgresStatement("SELECT $1::text", ["x"])])
                        let row = results[0].rows[0]
                        return (index, try row.decode(Int.self, at: 0), try row.decode(UUID.self, at: 1) == user ? user : nil)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.count == 120)
            #expect(answers.allSatisfy { $0.0 == $0.1 && $0.2 != nil }, "an answer reached another caller")
            #expect(await pool.statistics.open <= 4)
        }
    }

    /// The libpq trace of a transaction run through the waiter: every message sent before the first reply, one Sync,
    /// one ReadyForQuery.
    @Test func aWaitedTransactionIsOneRoundTrip() async throws {
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1) }) { database, pool in
            #expect(pool.socketWaiter != nil)
            let tracePath = FileManager.default.temporaryDirectory.appendingPathComponent("gp-trace-\(UUID()).log").path
            defer { try? FileManager.default.removeItem(atPath: tracePath) }
            let identity = RequestIdentity(role: .authenticated, claimsJSON: Self.claims)
            try await pool.withConnection { connection in
                try await connection.run { $0.startProtocolTrace(path: tracePath) }
                let results = try await connection.requestTransaction(
                    identity, [PostgresStatement("SELECT auth.uid()"), PostgresStatement("SELECT $1::text", ["x"])])
                #expect(try results[1].rows[0].decode(String.self, at: 0) == "x")
                try await connection.run { $0.stopProtocolTrace() }
            }
            let messages = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n").map { $0.split(separator: "\t") }
                .filter { $0.count >= 3 }
            let directions = messages.map { String($0[0]) }
            let lastSent = try #require(directions.lastIndex(of: "F"))
            let firstReceived = try #require(directions.firstIndex(of: "B"))
            #expect(lastSent < firstReceived, "a message was sent after a reply arrived: more than one round trip")
            #expect(messages.filter { $0[0] == "F" && $0[2] == "Sync" }.count == 1)
            #expect(messages.filter { $0[0] == "B" && $0[2] == "ReadyForQuery" }.count == 1)
        }
    }

    /// A server that does not answer within the I/O timeout: the caller gets `.timeout` within a tick of it, and the
    /// connection (its statement still running) is not reused. The database is migrated: the request roles are
    /// cluster-wide, and on a fresh cluster they exist only once the first migration has committed (an unmigrated
    /// database made before that fails `set_config('role', 'anon')` with a server error, not a timeout).
    @Test func aSilentServerTimesOut() async throws {
        let silentPool = { (database: TestDatabase) -> PostgresPool in
            var configuration = PostgresConfiguration(url: database.ownerURL)
            configuration.maxConnections = 1
            configuration.ioTimeout = .milliseconds(500)
            return PostgresPool(configuration: configuration)
        }
        try await TestDatabase.with(pool: silentPool) { database, pool in
            do {
                let started = ContinuousClock.now
                let error = try await #require(throws: PostgresError.self) {
                    try await pool.requestTransaction(RequestIdentity(role: .anon, claimsJSON: "{}"), [PostgresStatement("SELECT pg_sleep(5)")])
                }
                #expect(error.kind == .timeout, "\(error)")
                #expect(ContinuousClock.now - started < .seconds(4), "the timeout fired \(ContinuousClock.now - started) late")
                #expect(await pool.statistics.open == 0, "the timed-out connection went back to the pool")
                let row = try await pool.requestTransaction(RequestIdentity(role: .anon, claimsJSON: "{}"), [PostgresStatement("SELECT 7")])
                #expect(try row[0].rows[0].decode(Int.self, at: 0) == 7)
            }
        }
    }
}
