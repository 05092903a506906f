import Foundation
import GuestPassApp
import GuestPassCrypto
import GuestPassDevStack
import GuestPassTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// The service through HTTP while its PostgreSQL goes away: `/health/ready` answers 503 while the database is down and
/// 200 again after; under HTTP load across a `pg_ctl restart`, requests succeed again afterwards on new sessions, and
/// the service (this process) is never restarted. A cluster of the test's own.
@Suite struct LifecycleTests {
    @Test(.timeLimit(.minutes(3))) func serviceRidesOutAPostgresRestartUnderHTTPLoad() async throws {
        let cluster = try await ThrowawayCluster.create()
        defer { cluster.destroy() }
        var plan = DevStack.Plan(clusterURL: cluster.url, database: "lifecycle")
        plan.appNames = ["lifecycle"]
        var quiet = Logger(label: "test")
        quiet.logLevel = .warning
        let stack = try await DevStack.up(plan, logger: quiet)
        let key = try #require(stack.apps.first).publishableKey

        var configuration = AppConfiguration(
            databaseURL: stack.loginURL, auth: try AuthConfiguration(signer: JWTSigner(key: try ES256PrivateKey.generate()))
        )
        // Sign-ups are the load: limits that never refuse them.
        configuration.auth.signupBurstPerIP = 1_000_000
        configuration.auth.signupsPerHourPerIP = 1_000_000
        configuration.auth.signupBurstPerApp = 1_000_000
        configuration.auth.signupsPerHourPerApp = 1_000_000
        configuration.port = 0
        configuration.databasePoolSize = 4
        configuration.databaseAcquireTimeout = .seconds(2)
        let app = try buildApplication(configuration: configuration, logger: quiet)
        try await app.test(.ahc(.http)) { client in
            @Sendable func ready() async throws -> HTTPResponse.Status {
                try await client.execute(uri: "/health/ready", method: .get).status
            }
            @Sendable func signUp() async throws -> HTTPResponse.Status {
                let body = #"{"data":{"device_id":"\#(UUID().uuidString.lowercased())"}}"#
                return try await client.execute(
                    uri: "/auth/v1/signup", method: .post, headers: [.init("apikey")!: key, .contentType: "application/json"],
                    body: ByteBuffer(string: body)
                ).status
            }
            #expect(try await ready() == .ok)

            // Down: readiness says so (503), sign-ups fail cleanly (503, never a crash); back: both recover.
            try cluster.stop()
            try #require(try await eventually(timeout: .seconds(20)) { try await ready() == .serviceUnavailable })
            #expect(try await signUp() == .serviceUnavailable)
            try cluster.start()
            try #require(try await eventually(timeout: .seconds(30)) { try await ready() == .ok })

            // A restart under load: 4 workers sign up guests (bounded by count and time) until well after it.
            let succeeded = ManagedCounter()
            let stop = ManagedAtomicFlag()
            let load = Task {
                await withTaskGroup(of: [UInt].self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            var statuses: [UInt] = []
                            for _ in 0..<2_000 where !stop.isSet {
                                let status = (try? await signUp())?.code ?? 0
                                statuses.append(UInt(status))
                                if status == 200 { succeeded.increment() }
                                try? await Task.sleep(for: .milliseconds(10))
                            }
                            return statuses
                        }
                    }
                    return await group.reduce(into: []) { $0 += $1 }
                }
            }
            try #require(try await eventually(timeout: .seconds(30)) { succeeded.value >= 20 })
            try cluster.restart()
            let afterRestart = succeeded.value
            try #require(try await eventually(timeout: .seconds(60)) { succeeded.value >= afterRestart + 20 })
            stop.set()
            let statuses = await load.value
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 503 }, "only successes and clean 503s: \(Set(statuses))")
            #expect(try await ready() == .ok)
        }
    }
}
