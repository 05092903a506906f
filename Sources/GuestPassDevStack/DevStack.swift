public import Foundation
import GuestPassStore
import GuestPassCrypto
import GuestPassMigrations
import GuestPassPostgres
public import Logging

/// The one way to bring a GuestPass stack up on a PostgreSQL cluster: a database (created when missing, or copied
/// from a template), the core migrations (and an app's own folder of them), apps with their two API keys, and a JWT
/// signing key file, described by one `Description` that says how to serve it.
///
/// `scripts/serve`, `bench/`, `e2e/` (through `guestpass dev up --json`) and the Swift test harness
/// (`GuestPassTestSupport.TestDatabase`, in process) all use it, so a stack is set up the same way everywhere.
///
/// Design and limits:
/// - Idempotent: a database that exists is kept, migrations already applied are skipped, a key file that exists is
///   checked and kept. Concurrent runs for one database are safe (a lost `CREATE DATABASE` race is not an error; the
///   migration runner serialises on its own lock).
/// - API keys are stored hashed, so apps can be reused only from an earlier `Description` (`Plan.previous`): its
///   apps are kept when the database is the very same one (cluster system identifier and database oid, so a
///   re-created cluster or database does not count) and all their keys are still current; otherwise new apps are
///   made. The description holds secret keys: whoever keeps it keeps it private (`guestpass dev up --state` writes
///   it mode 0600).
/// - The server is not started here: each caller runs `guestpass serve` (or `buildApplication` in process) with
///   `Description.serveEnvironment`.
public enum DevStack {
    /// What to bring up.
    public struct Plan: Sendable {
        /// A superuser URL of the cluster (any database; the maintenance statements run on `postgres`).
        public var clusterURL: String
        /// The database's name: lowercase letters, digits and `_`, at most 63 characters, not starting with a digit.
        public var database: String
        /// Copy this (already prepared) database instead of creating an empty one.
        public var template: String?
        /// Apply the core migrations (embedded in the binary).
        public var migrate = true
        /// An app's own folder of migrations, applied after the core ones (`sql/examples`).
        public var appMigrations: URL?
        /// One app per name, each with a publishable and a secret key.
        public var appNames: [String] = []
        /// Where the ES256 signing key lives; generated (mode 0600) when the file is missing or empty.
        public var signingKeyFile: String?
        /// The description of an earlier run, whose apps are kept when still valid.
        public var previous: Description?

        public init(clusterURL: String, database: String) {
            self.clusterURL = clusterURL
            self.database = database
        }
    }

    /// A stack that is up: where it is, its apps and keys, and the environment `guestpass serve` needs.
    public struct Description: Codable, Sendable, Equatable {
        public struct App: Codable, Sendable, Equatable {
            public var appID: String
            public var name: String
            public var publishableKey: String
            public var secretKey: String

            enum CodingKeys: String, CodingKey {
                case appID = "app_id", name, publishableKey = "publishable_key", secretKey = "secret_key"
            }
        }

        public var database: String
        /// Cluster system identifier and database oid: what tells one database from a re-created one of that name.
        public var databaseIdentity: String
        /// As the cluster superuser, the owner of everything (migrations, administration; bypasses RLS).
        public var ownerURL: String
        /// As `guestpass_authenticator`, the login role `guestpass serve` uses.
        public var loginURL: String
        /// As `guestpass_console`, the operator console's login role (`GUESTPASS_CONSOLE_DATABASE_URL`).
        public var consoleURL: String?
        public var apps: [App]
        public var jwtSigningKeyFile: String?
        /// `DATABASE_URL` and `GUESTPASS_JWT_SIGNING_KEY_FILE` for `guestpass serve`.
        public var serveEnvironment: [String: String]

        enum CodingKeys: String, CodingKey {
            case database, databaseIdentity = "database_identity", ownerURL = "owner_url", loginURL = "login_url", apps
            case consoleURL = "console_url"
            case jwtSigningKeyFile = "jwt_signing_key_file", serveEnvironment = "serve_environment"
        }
    }

    /// The role `guestpass serve` logs in as (created by the core migrations).
    public static let loginRole = "guestpass_authenticator"
    /// The role the operator console logs in as (created by the core migrations).
    public static let consoleRole = "guestpass_console"

    /// Brings the stack of `plan` up and describes it.
    public static func up(_ plan: Plan, logger: Logger) async throws -> Description {
        try Self.validate(databaseName: plan.database)
        if let template = plan.template { try Self.validate(databaseName: template) }
        let ownerURL = Self.url(plan.clusterURL, database: plan.database)
        try await Self.createDatabase(plan.database, template: plan.template, clusterURL: plan.clusterURL)

        if plan.migrate {
            try await withShutdown(PostgresPool(configuration: Self.singleConnection(ownerURL, name: "guestpass-dev-migrate"))) { pool in
                _ = try await MigrationRunner(pool: pool, logger: logger).up(
                    core: try MigrationSet.core(),
                    app: try plan.appMigrations.map { try MigrationSet.load(from: $0, scope: .app) }
                )
            }
        }

        let (identity, apps) = try await withShutdown(PostgresPool(configuration: Self.singleConnection(ownerURL, name: "guestpass-dev"))) {
            pool in
            let identity = try await pool.execute(
                """
                SELECT (SELECT system_identifier FROM pg_catalog.pg_control_system())::text || '/' || d.oid::text
                FROM pg_catalog.pg_database AS d WHERE d.datname = pg_catalog.current_database()
                """
            ).rows[0].decode(String.self, at: 0)
            let apps = try await Self.apps(plan, identity: identity, administration: Administration(pool: pool))
            return (identity, apps)
        }

        if let file = plan.signingKeyFile { try Self.ensureSigningKey(at: file) }
        let loginURL = Self.url(plan.clusterURL, database: plan.database, user: Self.loginRole)
        let consoleURL = Self.url(plan.clusterURL, database: plan.database, user: Self.consoleRole)
        var environment = ["DATABASE_URL": loginURL, "GUESTPASS_CONSOLE_DATABASE_URL": consoleURL]
        environment["GUESTPASS_JWT_SIGNING_KEY_FILE"] = plan.signingKeyFile
        return Description(
            database: plan.database, databaseIdentity: identity, ownerURL: ownerURL, loginURL: loginURL, consoleURL: consoleURL, apps: apps,
            jwtSigningKeyFile: plan.signingKeyFile, serveEnvironment: environment
        )
    }

    /// Drops `database` (terminating its sessions); nothing happens when it does not exist.
    public static func down(database: String, clusterURL: String) async throws {
        try Self.validate(databaseName: database)
        _ = try await Self.withMaintenance(clusterURL) { try await $0.execute("DROP DATABASE IF EXISTS \"\(database)\" WITH (FORCE)") }
    }

    /// `url` with its database (and user) replaced.
    public static func url(_ url: String, database: String, user: String? = nil) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.path = "/" + database
        if let user { components.user = user }
        return components.string ?? url
    }

    // MARK: - Steps

    static func validate(databaseName name: String) throws {
        let bytes = name.utf8
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        let allowed = bytes.allSatisfy { ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || isDigit($0) || $0 == UInt8(ascii: "_") }
        guard let first = bytes.first, bytes.count <= 63, allowed, !isDigit(first) else {
            throw DevStackError("database name \(name.debugDescription) must be 1 to 63 of a-z, 0-9 and _, not starting with a digit")
        }
    }

    /// Creates `name` unless it exists, on one maintenance connection.
    private static func createDatabase(_ name: String, template: String?, clusterURL: String) async throws {
        try await Self.withMaintenance(clusterURL) { pool in
            let exists =
                try await pool.execute("SELECT count(*) FROM pg_catalog.pg_database WHERE datname = $1", [name])
                .rows[0].decode(Int.self, at: 0) == 1
            guard !exists else { return }
            do {
                try await pool.execute("CREATE DATABASE \"\(name)\"" + (template.map { " TEMPLATE \"\($0)\"" } ?? ""))
            } catch let error as PostgresError where error.sqlState == .duplicateDatabase || error.sqlState == .uniqueViolation {
                // Another run created it in between: the same outcome.
            }
        }
    }

    private static func apps(_ plan: Plan, identity: String, administration: Administration) async throws -> [Description.App] {
        var kept: [String: Description.App] = [:]
        if let previous = plan.previous, previous.database == plan.database, previous.databaseIdentity == identity {
            for app in previous.apps {
                guard let id = UUID(uuidString: app.appID),
                    try await administration.keysAreCurrent(app: id, publishableKey: app.publishableKey, secretKey: app.secretKey)
                else { continue }
                kept[app.name] = app
            }
        }
        var apps: [Description.App] = []
        for name in plan.appNames {
            if let app = kept[name] {
                apps.append(app)
                continue
            }
            let (id, publishable, secret) = try await administration.createApp(name: name)
            apps.append(.init(appID: id.uuidString.lowercased(), name: name, publishableKey: publishable.value, secretKey: secret.value))
        }
        return apps
    }

    private static func ensureSigningKey(at path: String) throws {
        if let existing = FileManager.default.contents(atPath: path), !existing.isEmpty {
            do {
                _ = try ES256PrivateKey(pemRepresentation: String(decoding: existing, as: UTF8.self))
            } catch {
                throw DevStackError("\(path) holds no ES256 private key in PEM: remove it to have a new one generated")
            }
            return
        }
        try Self.writePrivately(Data(try ES256PrivateKey.generate().pkcs8PEMRepresentation.utf8), to: path)
    }

    /// Writes `data` to `path` (mode 0600) through a temporary file renamed into place, so that a reader never sees a
    /// half-written key or description.
    public static func writePrivately(_ data: Data, to path: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw DevStackError("cannot write \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            try? FileManager.default.removeItem(atPath: temporary)
            throw DevStackError("cannot move \(temporary) to \(path)")
        }
    }

    private static func singleConnection(_ url: String, name: String) -> PostgresConfiguration {
        var configuration = PostgresConfiguration(url: url)
        configuration.maxConnections = 1
        configuration.applicationName = name
        return configuration
    }

    /// Runs `body` on one connection to the cluster's `postgres` database (CREATE/DROP DATABASE cannot run in a
    /// transaction, and not in the database they act on).
    private static func withMaintenance<R: Sendable>(_ clusterURL: String, _ body: (PostgresPool) async throws -> R) async throws -> R {
        try await withShutdown(
            PostgresPool(configuration: Self.singleConnection(Self.url(clusterURL, database: "postgres"), name: "guestpass-dev")), body)
    }
}

/// A stack could not be brought up for a reason of its own (not a database error).
public struct DevStackError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
