import Foundation
import GuestPassApp
import GuestPassCrypto
import GuestPassDevStack
import GuestPassPostgres
import GuestPassTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing
import NIOFoundationEssentialsCompat

/// The service through HTTP while its PostgreSQL goes away: `/health/ready` answers 503 while the database is down and
/// 200 again after; under HTTP load across a `pg_ctl restart`, requests succeed again afterwards on new sessions, no
/// sign-up is lost or doubled, and the service (this process) is never restarted. A cluster of the test's own.
@Suite struct LifecycleTests {
    /// One sign-up of the load: the device it was for, the HTTP status, and the user id when it was a 200. Declared
    /// here rather than inside the test's closure: a type declared in that closure makes the compiler check the
    /// closure's local functions as if their calls were synchronous ("no 'async' operations occur within 'await'").
    struct Attempt: Sendable {
        let device: String
        let status: UInt
        let userID: String?
    }

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
            /// A sign-up of `device`: the status, and the user id when it is a 200.
            @Sendable func signUp(device: String) async throws -> (status: HTTPResponse.Status, userID: String?) {
                let response = try await client.execute(
                    uri: "/auth/v1/signup", method: .post, headers: [.init("apikey")!: key, .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"data":{"device_id":"\#(device)"}}"#)
                )
                guard response.status == .ok else { return (response.status, nil) }
                let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                return (response.status, (object?["user"] as? [String: Any])?["id"] as? String)
            }
            @Sendable func signUp() async throws -> HTTPResponse.Status {
                try await signUp(device: UUID().uuidString.lowercased()).status
            }
            #expect(try await ready() == .ok)

            // Down: readiness says so (503), sign-ups fail cleanly (503, never a crash); back: both recover.
            try cluster.stop()
            try #require(try await eventually(timeout: .seconds(20)) { try await ready() == .serviceUnavailable })
            #expect(try await signUp() == .serviceUnavailable)
            try cluster.start()
            try #require(try await eventually(timeout: .seconds(30)) { try await ready() == .ok })

            // A restart under load: 4 workers sign up guests, a new device each (bounded by count and time), until
            // well after it.
            let guests = "SELECT count(*)::int8 FROM public.users WHERE app_id = $1::uuid"
            let appID = try #require(stack.apps.first).appID
            // Counted before the load starts, so that every guest the load creates is counted after.
            let before = try await withShutdown(PostgresPool(configuration: PostgresConfiguration(url: stack.ownerURL))) {
                try await $0.execute(guests, [appID]).rows[0].decode(Int.self, at: 0)
            }
            let succeeded = ManagedCounter()
            let stop = ManagedAtomicFlag()
            let load = Task {
                await withTaskGroup(of: [Attempt].self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            var attempts: [Attempt] = []
                            for _ in 0..<2_000 where !stop.isSet {
                                let device = UUID().uuidString.lowercased()
                                let answer = try? await signUp(device: device)
                                attempts.append(Attempt(device: device, status: UInt(answer?.status.code ?? 0), userID: answer?.userID))
                                if answer?.status == .ok { succeeded.increment() }
                                try? await Task.sleep(for: .milliseconds(10))
                            }
                            return attempts
                        }
                    }
                    return await group.reduce(into: []) { $0 += $1 }
                }
            }
            do {
                defer { stop.set() }
                try #require(try await eventually(timeout: .seconds(30)) { succeeded.value >= 20 })
                try cluster.restart()
                let afterRestart = succeeded.value
                try #require(try await eventually(timeout: .seconds(60)) { succeeded.value >= afterRestart + 20 })
            }
            let attempts = await load.value
            let statuses = Set(attempts.map(\.status))
            #expect(statuses.isSubset(of: [200, 503]), "only successes and clean 503s: \(statuses)")

            // Nothing lost, nothing doubled: every device signs up again once the database is back — a 200 before
            // gets the same user, a 503 gets the user its sign-up may have committed or a new one — and the app then
            // holds exactly one guest per device.
            for attempt in attempts {
                let again = try await signUp(device: attempt.device)
                #expect(again.status == .ok)
                if let first = attempt.userID { #expect(again.userID == first, "a device's guest changed across the restart") }
            }
            let after = try await withShutdown(PostgresPool(configuration: PostgresConfiguration(url: stack.ownerURL))) {
                try await $0.execute(guests, [appID]).rows[0].decode(Int.self, at: 0)
            }
            #expect(after - before == attempts.count, "guests created: \(after - before) for \(attempts.count) devices")
            #expect(try await ready() == .ok)
        }
    }
}
