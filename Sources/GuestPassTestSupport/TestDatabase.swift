public import Foundation
import GuestPassDevStack
public import GuestPassPostgres
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
    /// URL as the operator console's login role, `guestpass_console`.
    public let consoleURL: String

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

    /// Runs `body` with a fresh database (see `create`) and a pool on it (made by `pool`), then shuts the pool down and
    /// drops the database, awaited, whether `body` returns or throws.
    public static func with<R: Sendable>(
        migrated: Bool = true, examples: Bool = false, pool makePool: (TestDatabase) -> PostgresPool,
        _ body: (TestDatabase, PostgresPool) async throws -> R
    ) async throws -> R {
        let database = try await Self.create(migrated: migrated, examples: examples)
        return try await withCleanup {
            try await withShutdown(makePool(database)) { try await body(database, $0) }
        } cleanup: {
            await database.drop()
        }
    }

    /// Creates a fresh database: migrated with the core migrations (the default), or empty; with `examples`, the
    /// example app schema (`sql/examples`) is applied too, as `guestpass migrate up --dir sql/examples` does.
    public static func create(migrated: Bool = true, examples: Bool = false) async throws -> TestDatabase {
        try await Registry.shared.create(migrated: migrated, examples: examples)
    }

    /// `sql/examples` of this repository.
    public static var examplesDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("sql/examples", isDirectory: true)
    }

    /// A pool on this database as the login role (what `guestpass serve` uses); `acquireTimeout` is
    /// `PostgresConfiguration`'s default unless given.
    public func loginPool(
        maxConnections: Int = 8, poolMode: PostgresConfiguration.PoolMode = .session, sessionSettings: [String: String] = [:],
        acquireTimeout: Duration? = nil
    ) -> PostgresPool {
        var configuration = PostgresConfiguration(url: self.loginURL)
        configuration.maxConnections = maxConnections
        if let acquireTimeout { configuration.acquireTimeout = acquireTimeout }
        configuration.poolMode = poolMode
        configuration.sessionSettings = sessionSettings
        return PostgresPool(configuration: configuration)
    }

    /// A pool on this database as the operator console's login role (what the console's `ConsoleStore` uses).
    public func consolePool(maxConnections: Int = 4) -> PostgresPool {
        var configuration = PostgresConfiguration(url: self.consoleURL)
        configuration.maxConnections = maxConnections
        return PostgresPool(configuration: configuration)
    }

    /// A pool on this database as the superuser (fixtures and checks that must see every row); `acquireTimeout` is
    /// `PostgresConfiguration`'s default unless given.
    public func ownerPool(maxConnections: Int = 4, acquireTimeout: Duration = .seconds(5)) -> PostgresPool {
        var configuration = PostgresConfiguration(url: self.ownerURL)
        configuration.maxConnections = maxConnections
        configuration.acquireTimeout = acquireTimeout
        return PostgresPool(configuration: configuration)
    }

    /// Drops the database.
    public func drop() async {
        guard let cluster = try? TestDatabase.clusterURL() else { return }
        try? await DevStack.down(database: self.name, clusterURL: cluster)
    }
}

/// Serialises database creation (copying one template) within the test process. Every database is brought up by
/// `DevStack`, the set-up `guestpass dev up` runs: the template with the migrations, each test's database as a copy.
private actor Registry {
    static let shared = Registry()
    private var templates: [Bool: Task<String, any Error>] = [:]
    private var counter = 0

    func create(migrated: Bool, examples: Bool) async throws -> TestDatabase {
        let cluster = try TestDatabase.clusterURL()
        self.counter += 1
        let name = "gp_test_\(getpid())_\(self.counter)_\(UInt32.random(in: 0...UInt32.max))"
        var plan = DevStack.Plan(clusterURL: cluster, database: name)
        plan.migrate = false
        if migrated { plan.template = try await self.migratedTemplate(cluster: cluster, examples: examples) }
        let stack = try await DevStack.up(plan, logger: Self.logger)
        return TestDatabase(
            name: name, ownerURL: stack.ownerURL, loginURL: stack.loginURL,
            consoleURL: stack.consoleURL ?? DevStack.url(cluster, database: name, user: DevStack.consoleRole))
    }

    /// The migrated template, built once however many tests ask for it at the same time.
    private func migratedTemplate(cluster: String, examples: Bool) async throws -> String {
        if let template = self.templates[examples] { return try await template.value }
        let task = Task {
            var plan = DevStack.Plan(clusterURL: cluster, database: "gp_template_\(getpid())_\(UInt32.random(in: 0...UInt32.max))")
            plan.appMigrations = examples ? TestDatabase.examplesDirectory : nil
            return try await DevStack.up(plan, logger: Self.logger).database
        }
        self.templates[examples] = task
        return try await task.value
    }

    private static var logger: Logger {
        var logger = Logger(label: "test.devstack")
        logger.logLevel = .warning
        return logger
    }
}
