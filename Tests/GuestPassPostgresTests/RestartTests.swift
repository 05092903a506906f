import Foundation
import GuestPassPostgres
import GuestPassTestSupport
import Testing

/// The pool heals itself after `pg_ctl restart` while requests keep coming: some may fail during the outage,
/// all succeed after it, and the process (this pool object) is never restarted.
@Suite struct RestartTests {
    @Test(.timeLimit(.minutes(2))) func poolRecoversAfterServerRestartUnderLoad() async throws {
        let cluster = try await ThrowawayCluster.create()
        defer { cluster.destroy() }
        var configuration = PostgresConfiguration(url: cluster.url)
        configuration.maxConnections = 8
        // Generous: the last check runs 100 requests on 8 connections, which on a loaded 2-core machine can queue for
        // seconds; the outage itself fails fast through the connect timeout.
        configuration.acquireTimeout = .seconds(10)
        configuration.connectTimeout = .seconds(2)
        try await withShutdown(PostgresPool(configuration: configuration)) { pool in

            // Fill the pool with live sessions before the restart.
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<16 { group.addTask { _ = try? await pool.execute("SELECT pg_sleep(0.02)") } }
            }
            let pidsBefore = Set(
                try await (0..<8).asyncMap { _ in try await pool.execute("SELECT pg_backend_pid()").rows[0].decode(Int32.self, at: 0) })

            // Load: 4 workers issue requests every few milliseconds until told to stop (bounded by count and time).
            let stop = ManagedAtomicFlag()
            let succeeded = ManagedCounter()
            let load = Task {
                await withTaskGroup(of: (ok: Int, failed: Int).self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            var ok = 0
                            var failed = 0
                            for _ in 0..<5_000 where !stop.isSet {
                                do {
                                    _ = try await pool.execute("SELECT 1")
                                    ok += 1
                                    succeeded.increment()
                                } catch {
                                    failed += 1
                                }
                                try? await Task.sleep(for: .milliseconds(5))
                            }
                            return (ok, failed)
                        }
                    }
                    return await group.reduce(into: (ok: 0, failed: 0)) {
                        $0.ok += $1.ok
                        $0.failed += $1.failed
                    }
                }
            }
            // The load is running, then the restart, then the load succeeds again on new sessions.
            try #require(try await eventually(timeout: .seconds(30)) { succeeded.value >= 20 })
            try cluster.restart()
            let afterRestart = succeeded.value
            try #require(try await eventually(timeout: .seconds(30)) { succeeded.value >= afterRestart + 20 })
            stop.set()
            let counts = await load.value
            #expect(counts.ok > 0)

            // After the outage every request succeeds, on new sessions.
            var pidsAfter = Set<Int32>()
            for _ in 0..<50 {
                pidsAfter.insert(try await pool.execute("SELECT pg_backend_pid()").rows[0].decode(Int32.self, at: 0))
            }
            #expect(pidsAfter.isDisjoint(with: pidsBefore), "every session after the restart is a new one")
            let concurrent = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<100 { group.addTask { (try? await pool.execute("SELECT 1")) != nil } }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(concurrent == 100)
        }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var values: [T] = []
        for element in self { values.append(try await transform(element)) }
        return values
    }
}
