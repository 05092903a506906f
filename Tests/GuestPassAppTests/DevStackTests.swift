import CoreMigrations
import Foundation
import GuestPassApp
import GuestPassDevStack
import GuestPassMigrations
import GuestPassPostgres
import GuestPassTestSupport
import Logging
import Testing
@testable import GuestPassStore

/// `DevStack`, the set-up behind `guestpass dev up`, `scripts/serve`, `bench/`, `e2e/` and `TestDatabase`.
@Suite struct DevStackTests {
    /// Runs `body` with a new database name and a scratch folder on the test cluster; drops the database afterwards.
    static func withFreshName(_ body: (_ cluster: String, _ name: String, _ folder: URL) async throws -> Void) async throws {
        let cluster = try TestDatabase.clusterURL()
        let name = "gp_devstack_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        do {
            try await body(cluster, name, folder)
        } catch {
            try? await DevStack.down(database: name, clusterURL: cluster)
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
        try await DevStack.down(database: name, clusterURL: cluster)
        try? FileManager.default.removeItem(at: folder)
    }

    static var logger: Logger {
        var logger = Logger(label: "test.devstack")
        logger.logLevel = .warning
        return logger
    }

    static func keysAreCurrent(_ stack: DevStack.Description) async throws -> Bool {
        try await withShutdown(PostgresPool(configuration: PostgresConfiguration(url: stack.ownerURL))) { pool in
            for app in stack.apps {
                guard
                    try await Administration(pool: pool).keysAreCurrent(
                        app: UUID(uuidString: app.appID)!, publishableKey: app.publishableKey, secretKey: app.secretKey)
                else { return false }
            }
            return true
        }
    }

    @Test func aKeptDescriptionReusesItsAppsAndKey() async throws {
        try await Self.withFreshName { cluster, name, folder in
            var plan = DevStack.Plan(clusterURL: cluster, database: name)
            plan.appNames = ["one", "two"]
            plan.signingKeyFile = folder.appendingPathComponent("key.pem").path
            let first = try await DevStack.up(plan, logger: Self.logger)
            #expect(first.apps.map(\.name) == ["one", "two"])
            #expect(try await Self.keysAreCurrent(first))
            let key = try #require(FileManager.default.contents(atPath: plan.signingKeyFile!))
            let mode = try FileManager.default.attributesOfItem(atPath: plan.signingKeyFile!)[.posixPermissions] as? Int
            #expect(mode == 0o600, "the signing key is private")
            #expect(
                first.serveEnvironment == [
                    "DATABASE_URL": first.loginURL, "GUESTPASS_JWT_SIGNING_KEY_FILE": plan.signingKeyFile!,
                    "GUESTPASS_CONSOLE_DATABASE_URL": try #require(first.consoleURL),
                ])

            plan.previous = first
            plan.appNames = ["one", "two", "three"]
            let second = try await DevStack.up(plan, logger: Self.logger)
            #expect(Array(second.apps.prefix(2)) == first.apps, "the kept apps, with the same keys")
            #expect(second.apps.count == 3 && second.apps[2].name == "three")
            #expect(try await Self.keysAreCurrent(second))
            #expect(FileManager.default.contents(atPath: plan.signingKeyFile!) == key, "the key file is kept")

            // The login role serves from the login URL.
            let answer = try await withShutdown(PostgresPool(configuration: PostgresConfiguration(url: second.loginURL))) {
                try await $0.execute("SELECT current_user::text").rows[0].decode(String.self, at: 0)
            }
            #expect(answer == DevStack.loginRole)
            // The operator console logs in from its own URL, as its own role.
            let console = try await withShutdown(PostgresPool(configuration: PostgresConfiguration(url: try #require(second.consoleURL)))) {
                try await $0.execute("SELECT current_user::text").rows[0].decode(String.self, at: 0)
            }
            #expect(console == DevStack.consoleRole)
        }
    }

    @Test func aRecreatedDatabaseGetsNewApps() async throws {
        try await Self.withFreshName { cluster, name, _ in
            var plan = DevStack.Plan(clusterURL: cluster, database: name)
            plan.appNames = ["dev"]
            let first = try await DevStack.up(plan, logger: Self.logger)
            try await DevStack.down(database: name, clusterURL: cluster)
            plan.previous = first
            let second = try await DevStack.up(plan, logger: Self.logger)
            #expect(second.databaseIdentity != first.databaseIdentity)
            #expect(second.apps[0].appID != first.apps[0].appID)
            #expect(second.apps[0].publishableKey != first.apps[0].publishableKey)
            #expect(try await Self.keysAreCurrent(second))
        }
    }

    @Test func aDescriptionWhoseKeysWereRevokedIsNotReused() async throws {
        try await Self.withFreshName { cluster, name, _ in
            var plan = DevStack.Plan(clusterURL: cluster, database: name)
            plan.appNames = ["dev"]
            let first = try await DevStack.up(plan, logger: Self.logger)
            _ = try await withShutdown(PostgresPool(configuration: PostgresConfiguration(url: first.ownerURL))) {
                try await $0.execute("UPDATE guestpass.api_keys SET revoked_at = now() WHERE kind = 'secret'")
            }
            plan.previous = first
            let second = try await DevStack.up(plan, logger: Self.logger)
            #expect(second.apps[0].appID != first.apps[0].appID, "an app whose secret key was revoked is replaced")
        }
    }

    /// Eight set-ups of one new database at once: all succeed, and the migrations ran once.
    @Test func concurrentSetUpsOfOneDatabaseAgree() async throws {
        try await Self.withFreshName { cluster, name, _ in
            let plan = DevStack.Plan(clusterURL: cluster, database: name)
            let stacks = try await withThrowingTaskGroup(of: DevStack.Description.self) { group in
                for _ in 0..<8 { group.addTask { try await DevStack.up(plan, logger: Self.logger) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(stacks.map(\.databaseIdentity)).count == 1)
            let files = try MigrationFile.load(from: CoreMigrations.directory, scope: .core)
            let applied = try await withShutdown(PostgresPool(configuration: PostgresConfiguration(url: stacks[0].ownerURL))) {
                try await $0.execute("SELECT count(*) FROM guestpass_migrations.history").rows[0].decode(Int.self, at: 0)
            }
            #expect(applied == files.count)
        }
    }

    @Test func aKeyFileThatHoldsNoKeyIsRefusedAndKept() async throws {
        try await Self.withFreshName { cluster, name, folder in
            let file = folder.appendingPathComponent("key.pem").path
            #expect(FileManager.default.createFile(atPath: file, contents: Data("not a key\n".utf8)))
            var plan = DevStack.Plan(clusterURL: cluster, database: name)
            plan.signingKeyFile = file
            await #expect(throws: DevStackError.self) { try await DevStack.up(plan, logger: Self.logger) }
            #expect(FileManager.default.contents(atPath: file) == Data("not a key\n".utf8))
        }
    }

    @Test(arguments: ["", "Upper", "1starts_with_digit", "semi;colon", "quote\"", String(repeating: "a", count: 64)])
    func databaseNamesOutsideTheSafeSetAreRefused(name: String) async throws {
        let plan = DevStack.Plan(clusterURL: try TestDatabase.clusterURL(), database: name)
        await #expect(throws: DevStackError.self) { try await DevStack.up(plan, logger: Self.logger) }
    }
}
