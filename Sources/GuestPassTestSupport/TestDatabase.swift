import CoreMigrations
import Foundation
import GuestPassMigrations
import GuestPassPostgres
import Logging

/// A throwaway database in the test cluster that `./scripts/test` starts (`GUESTPASS_TEST_DATABASE_URL`).
///
/// Each test gets its own database, copied from a template that has the core migrations applied, so tests can run
/// in parallel without seeing each other's rows.
public struct TestDatabase: Sendable {
    /// The database's name.
    public let name: String
    /// URL as the cluster superuser (owner of everything; bypasses RLS).
    public let ownerURL: String
    /// URL as the service's login role, `guestpass_authenticator`.
    public let loginURL: String

    /// The superuser URL of the test cluster's maintenance database.
    public static func clusterURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["GUESTPASS_TEST_DATABASE_URL"], !url.isEmpty else {
            throw PostgresError(
                .connectionFailed,
                message: "GUESTPASS_TEST_DATABASE_URL is not set: run the tests with ./scripts/test (it starts a throwaway cluster)"
            )
        }
        return url
    }

    /// `url` with its database and user replaced.
    public static func url(_ url: String, database: String, user: String? = nil) -> String {
        var components = URLComponents(string: url)!
        components.path = "/" + database
        if let user { components.user = user }
        return components.string!
    }

    /// Creates a fresh database: migrated with the core migrations (the default), or empty; with `examples`, the
    /// example app schema (`sql/examples`) is applied too, as `guestpass migrate up --dir sql/examples` does.
    /// Runs `body` with a fresh database and a pool on it (made by `pool`), then shuts the pool down and drops the
    /// database, awaited, whether `body` returns or throws.
    public static func with<R: Sendable>(
        migrated: Bool = true, examples: Bool = false, pool makePool: (TestDatabase) -> PostgresPool,
        _ body: (TestDatabase, PostgresPool) async throws -> R
    ) async throws -> R {
        let database = try await Self.create(migrated: migrated, examples: examples)
        let pool = makePool(database)
        do {
            let result = try await body(database, pool)
            await pool.shutdown()
            await database.drop()
            return result
        } catch {
            await pool.shutdown()
            await database.drop()
            throw error
        }
    }

    public static func create(migrated: Bool = true, examples: Bool = false) async throws -> TestDatabase {
        try await Registry.shared.create(migrated: migrated, examples: examples)
    }

    /// `sql/examples` of this repository.
    public static var examplesDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("sql/examples", isDirectory: true)
    }

    /// A pool on this database as the login role (what `guestpass serve` uses).
    public func loginPool(maxConnections: Int = 8) -> PostgresPool {
        var configuration = PostgresConfiguration(url: self.loginURL)
        configuration.maxConnections = maxConnections
        return PostgresPool(configuration: configuration)
    }

    /// A pool on this database as the superuser (fixtures and checks that must see every row).
    public func ownerPool(maxConnections: Int = 4) -> PostgresPool {
        var configuration = PostgresConfiguration(url: self.ownerURL)
        configuration.maxConnections = maxConnections
        return PostgresPool(configuration: configuration)
    }

    /// Drops the database.
    public func drop() async {
        try? await Registry.shared.run("DROP DATABASE IF EXISTS \"\(self.name)\" WITH (FORCE)")
    }
}

/// Runs `body` with `pool`, then shuts the pool down, awaited, whether `body` returns or throws.
public func withShutdown<R: Sendable>(_ pool: PostgresPool, _ body: (PostgresPool) async throws -> R) async throws -> R {
    do {
        let result = try await body(pool)
        await pool.shutdown()
        return result
    } catch {
        await pool.shutdown()
        throw error
    }
}

/// Serialises database creation (copying one template) within the test process.
private actor Registry {
    static let shared = Registry()
    private var templates: [Bool: Task<String, any Error>] = [:]
    private var counter = 0

    func create(migrated: Bool, examples: Bool) async throws -> TestDatabase {
        let cluster = try TestDatabase.clusterURL()
        self.counter += 1
        let name = "gp_test_\(getpid())_\(self.counter)_\(UInt32.random(in: 0...UInt32.max))"
        if migrated {
            let template = try await self.migratedTemplate(cluster: cluster, examples: examples)
            try await self.run("CREATE DATABASE \"\(name)\" TEMPLATE \"\(template)\"")
        } else {
            try await self.run("CREATE DATABASE \"\(name)\"")
        }
        return TestDatabase(
            name: name,
            ownerURL: TestDatabase.url(cluster, database: name),
            loginURL: TestDatabase.url(cluster, database: name, user: "guestpass_authenticator")
        )
    }

    /// The migrated template, built once however many tests ask for it at the same time.
    private func migratedTemplate(cluster: String, examples: Bool) async throws -> String {
        if let template = self.templates[examples] { return try await template.value }
        let task = Task { try await self.buildTemplate(cluster: cluster, examples: examples) }
        self.templates[examples] = task
        return try await task.value
    }

    private func buildTemplate(cluster: String, examples: Bool) async throws -> String {
        let name = "gp_template_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        try await self.run("CREATE DATABASE \"\(name)\"")
        let pool = PostgresPool(configuration: PostgresConfiguration(url: TestDatabase.url(cluster, database: name)))
        var logger = Logger(label: "test.migrate")
        logger.logLevel = .warning
        let runner = MigrationRunner(pool: pool, logger: logger)
        _ = try await runner.up(
            core: try MigrationFile.load(from: CoreMigrations.directory, scope: .core),
            app: examples ? try MigrationFile.load(from: TestDatabase.examplesDirectory, scope: .app) : nil
        )
        await pool.shutdown()
        return name
    }

    /// Runs a maintenance statement on the cluster's `postgres` database.
    func run(_ sql: String) async throws {
        var configuration = PostgresConfiguration(url: try TestDatabase.clusterURL())
        configuration.maxConnections = 1
        let pool = PostgresPool(configuration: configuration)
        do {
            try await pool.execute(sql)
        } catch {
            await pool.shutdown()
            throw error
        }
        await pool.shutdown()
    }
}
