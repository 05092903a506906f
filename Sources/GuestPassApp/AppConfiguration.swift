import GuestPassApple
public import GuestPassPostgres
public import Logging
public import Prometheus
import Foundation

/// Everything `guestpass serve` needs, read from environment variables.
public struct AppConfiguration: Sendable {
    /// libpq URL of the login role (`DATABASE_URL`).
    public var databaseURL: String
    /// libpq URL of a streaming replica (`GUESTPASS_DATABASE_READ_URL`): read-only RPC (GET, and functions that are
    /// STABLE or IMMUTABLE) runs there; everything else on `databaseURL`. Nil: everything on `databaseURL`.
    public var databaseReadURL: String?
    /// `transaction` when `DATABASE_URL` (and the read URL) point at PgBouncer with `pool_mode = transaction`
    /// (`GUESTPASS_DB_POOL_MODE`, default `session`): see `PostgresConfiguration.PoolMode`.
    public var databasePoolMode: PostgresConfiguration.PoolMode = .session
    /// Bind address (`GUESTPASS_HOST`, default 127.0.0.1).
    public var host: String = "127.0.0.1"
    /// Bind port (`GUESTPASS_PORT`, default 8080; 0 picks a free port).
    public var port: Int = 8080
    /// Most database connections (`GUESTPASS_DB_POOL_SIZE`, default 16).
    public var databasePoolSize: Int = 16
    /// How long a request waits for a free connection before a 503 (`GUESTPASS_DB_ACQUIRE_TIMEOUT`, seconds, default 5).
    public var databaseAcquireTimeout: Duration = .seconds(5)
    /// Log level (`LOG_LEVEL`, default info).
    public var logLevel: Logger.Level = .info
    /// Schemas whose functions (`/rest/v1/rpc`) and tables (`/rest/v1/<table>`) are exposed (`GUESTPASS_DB_SCHEMAS`,
    /// default `public`).
    public var exposedSchemas: [String] = ["public"]
    /// The schemas after the request's own in its `search_path` (`GUESTPASS_DB_EXTRA_SEARCH_PATH`, comma-separated,
    /// default `public`; PostgREST's `db-extra-search-path`): where extensions' types, operators and functions live.
    public var extraSearchPath: [String] = ["public"]
    /// The shortest time between two catalog reloads that a request naming an unknown function may cause
    /// (`GUESTPASS_DB_CATALOG_RETRY_MS`, milliseconds, default 1000; 0 = whenever none is running).
    public var catalogRetryInterval: Duration = .seconds(1)
    /// How long a load of the schema cache is trusted before a request reloads it (default 30 s; `NOTIFY pgrst` and
    /// SIGHUP reload it at once).
    public var catalogTimeToLive: Duration = .seconds(30)
    /// The longest one call to Apple's Sign in with Apple endpoints may take, connecting included
    /// (`GUESTPASS_APPLE_TIMEOUT_MS`, milliseconds, default 5000, 100...60000). A refused connection or a name that does
    /// not resolve fails at once whatever this is (`AppleHTTP`).
    public var appleTimeout: Duration = AppleHTTP.defaultTimeout
    /// `db-max-rows`: the most rows a table read returns (`GUESTPASS_DB_MAX_ROWS`, Supabase's 1000 by default).
    public var maxRows = 1000
    /// The caps of `/realtime/v1/websocket` (`RealtimeSocketLimits`: frame size, sockets per address and app, channels,
    /// message rate, queue per socket).
    public var realtimeLimits = RealtimeSocketLimits()
    /// Tokens, sessions and sign-up limits.
    public var auth: AuthConfiguration
    /// The Prometheus listener (`GUESTPASS_METRICS_ADDRESS`, `host:port`, default 127.0.0.1:9464; `off` for none).
    public var metricsAddress: (host: String, port: Int)? = ("127.0.0.1", 9464)
    /// The operator console's listener (`GUESTPASS_CONSOLE_ADDRESS`, `host:port`, default 127.0.0.1:9465; `off` for
    /// none). The console runs only when `consoleDatabaseURL` is set too.
    public var consoleAddress: (host: String, port: Int)? = ("127.0.0.1", 9465)
    /// libpq URL of the console's login role, `guestpass_console` (`GUESTPASS_CONSOLE_DATABASE_URL`): nil, no console.
    public var consoleDatabaseURL: String?
    /// Set when graceful shutdown begins (`ShutdownDrain`): `/health/ready` then answers 503.
    public var readiness = ReadinessGate()
    /// How long readiness answers 503 before the server stops accepting connections (`GUESTPASS_SHUTDOWN_DRAIN_MS`,
    /// default 2000, 0...60000).
    public var shutdownDrain: Duration = .seconds(2)
    /// Where mailed links point (`GUESTPASS_PUBLIC_URL`, e.g. https://api.example.com): the server as users' browsers
    /// reach it. Nil: `http://<host>:<port>` of this server.
    public var publicURL: String?
    /// Whether this server delivers the mail outbox (`GUESTPASS_MAIL_SENDER`, `on` by default; `off` for a replica
    /// that should leave it to others).
    public var mailSender = true
    /// Storage: where objects' bytes live and the storage API's timings (`StorageConfiguration`).
    public var storage = StorageConfiguration()
    /// The registry `/metrics` serves; `guestpass serve` bootstraps swift-metrics with it. Nil: no metrics listener.
    public var metricsRegistry: PrometheusCollectorRegistry?
    /// Runs between Apple's DeviceCheck update and the database commit of a welcome grant. Tests (`@testable`) inject
    /// crashes here; it is not part of the public configuration.
    var afterAppleUpdate: @Sendable () async throws -> Void = {}

    public init(databaseURL: String, auth: AuthConfiguration) {
        self.databaseURL = databaseURL
        self.auth = auth
    }

    /// The token service for `auth` (fails only on duplicate key ids).
    var tokens: TokenService {
        get throws { try TokenService(configuration: self.auth) }
    }

    /// Reads the configuration from `environment`; throws a readable error for a missing or malformed value.
    public init(environment: [String: String]) throws {
        guard let url = environment["DATABASE_URL"], !url.isEmpty else {
            throw ConfigurationError("DATABASE_URL is not set (a libpq URL for the guestpass_authenticator role)")
        }
        self.init(databaseURL: url, auth: try AuthConfiguration(environment: environment))
        if let readURL = environment["GUESTPASS_DATABASE_READ_URL"], !readURL.isEmpty { self.databaseReadURL = readURL }
        self.databasePoolMode = try Self.poolMode(environment: environment)
        if let host = environment[ListenerVariable.host], !host.isEmpty { self.host = host }
        if let value = try Self.number(environment, ListenerVariable.port, in: 0...65535, "a port number") { self.port = value }
        if let value = try Self.number(environment, "GUESTPASS_DB_POOL_SIZE", in: 1...Int.max, "a positive number") { self.databasePoolSize = value }
        self.exposedSchemas = try Self.exposedSchemas(environment["GUESTPASS_DB_SCHEMAS"])
        if let value = environment["GUESTPASS_DB_EXTRA_SEARCH_PATH"] {
            self.extraSearchPath = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        if let value = try Self.number(environment, "GUESTPASS_DB_ACQUIRE_TIMEOUT", in: 1...600, "a number of seconds in 1...600") {
            self.databaseAcquireTimeout = .seconds(value)
        }
        if let value = try Self.number(environment, "GUESTPASS_DB_CATALOG_RETRY_MS", in: 0...60_000, "a number of milliseconds in 0...60000") {
            self.catalogRetryInterval = .milliseconds(value)
        }
        if let value = try Self.number(environment, "GUESTPASS_DB_MAX_ROWS", in: 1...1_000_000, "a number of rows in 1...1000000") {
            self.maxRows = value
        }
        if let value = try Self.number(environment, "GUESTPASS_APPLE_TIMEOUT_MS", in: 100...60_000, "a number of milliseconds in 100...60000") {
            self.appleTimeout = .milliseconds(value)
        }
        if let value = try Self.number(environment, "GUESTPASS_SHUTDOWN_DRAIN_MS", in: 0...60_000, "a number of milliseconds in 0...60000") {
            self.shutdownDrain = .milliseconds(value)
        }
        if let address = environment[ListenerVariable.metricsAddress], !address.isEmpty {
            self.metricsAddress = try Self.address(address, ListenerVariable.metricsAddress)
        }
        if let address = environment[ListenerVariable.consoleAddress], !address.isEmpty {
            self.consoleAddress = try Self.address(address, ListenerVariable.consoleAddress)
        }
        if let url = environment[Self.consoleDatabaseURLVariable], !url.isEmpty { self.consoleDatabaseURL = url }
        if let url = environment["GUESTPASS_PUBLIC_URL"], !url.isEmpty {
            guard url.hasPrefix("http://") || url.hasPrefix("https://"), URL(string: url) != nil else {
                throw ConfigurationError("GUESTPASS_PUBLIC_URL must be an http or https URL, got \(url)")
            }
            self.publicURL = url.hasSuffix("/") ? String(url.dropLast()) : url
        }
        self.storage = try StorageConfiguration(environment: environment)
        if let sender = environment["GUESTPASS_MAIL_SENDER"], !sender.isEmpty {
            guard sender == "on" || sender == "off" else { throw ConfigurationError("GUESTPASS_MAIL_SENDER must be on or off, got \(sender)") }
            self.mailSender = sender == "on"
        }
        if let level = environment["LOG_LEVEL"] {
            guard let value = Logger.Level(rawValue: level.lowercased()) else {
                throw ConfigurationError("LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical")
            }
            self.logLevel = value
        }
    }

    /// The whole number `environment[name]` holds, nil when it is unset; anything but a whole number in `range` throws
    /// "<name> must be <what>, got <value>".
    private static func number(
        _ environment: [String: String], _ name: String, in range: ClosedRange<Int>, _ what: String
    ) throws -> Int? {
        guard let text = environment[name] else { return nil }
        guard let value = Int(text), range.contains(value) else { throw ConfigurationError("\(name) must be \(what), got \(text)") }
        return value
    }

    /// The variable naming the console's database URL.
    public static let consoleDatabaseURLVariable = "GUESTPASS_CONSOLE_DATABASE_URL"

    /// A listener's `host:port`, or nil for `off`; anything else throws "<variable> must be host:port or off".
    private static func address(_ text: String, _ variable: String) throws -> (host: String, port: Int)? {
        if text == "off" { return nil }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port),
            colon > text.startIndex
        else { throw ConfigurationError("\(variable) must be host:port or off, got \(text)") }
        return (String(text[..<colon]), port)
    }

    /// The exposed schemas of `GUESTPASS_DB_SCHEMAS` (comma-separated; `public` when unset or empty): app schemas only,
    /// never GuestPass's own or PostgreSQL's. The one parser of the variable (`serve`, `prune`).
    public static func exposedSchemas(_ value: String?) throws -> [String] {
        guard let value, !value.isEmpty else { return ["public"] }
        let names = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let reserved: Set<String> = ["auth", "guestpass", "guestpass_server", "guestpass_migrations", "pg_catalog", "information_schema"]
        guard !names.isEmpty, names.allSatisfy({ !reserved.contains($0) && !$0.hasPrefix("pg_") }) else {
            throw ConfigurationError("GUESTPASS_DB_SCHEMAS must list app schemas only (not auth, guestpass*, pg_*)")
        }
        return names
    }

    /// `GUESTPASS_DB_POOL_MODE` (`session` by default, or `transaction` behind PgBouncer's transaction pooling), for
    /// `serve` and the operator commands alike.
    public static func poolMode(environment: [String: String]) throws -> PostgresConfiguration.PoolMode {
        guard let mode = environment["GUESTPASS_DB_POOL_MODE"], !mode.isEmpty else { return .session }
        guard let value = PostgresConfiguration.PoolMode(rawValue: mode) else {
            throw ConfigurationError("GUESTPASS_DB_POOL_MODE must be session or transaction (PgBouncer's pool_mode), got \(mode)")
        }
        return value
    }

    /// The pool settings derived from this configuration.
    public var postgres: PostgresConfiguration { self.pool(url: self.databaseURL, applicationName: "guestpass-serve") }

    /// The console's pool settings (a few connections as `guestpass_console`), when the console is configured.
    public var postgresConsole: PostgresConfiguration? {
        guard let url = self.consoleDatabaseURL, self.consoleAddress != nil else { return nil }
        var configuration = PostgresConfiguration(url: url)
        configuration.maxConnections = 4
        configuration.acquireTimeout = self.databaseAcquireTimeout
        configuration.applicationName = "guestpass-console"
        configuration.poolMode = self.databasePoolMode
        return configuration
    }

    /// The read replica's pool settings, when `databaseReadURL` is set (same size and limits as the primary's).
    public var postgresRead: PostgresConfiguration? {
        self.databaseReadURL.map { self.pool(url: $0, applicationName: "guestpass-serve-read") }
    }

    private func pool(url: String, applicationName: String) -> PostgresConfiguration {
        var configuration = PostgresConfiguration(url: url)
        configuration.maxConnections = self.databasePoolSize
        configuration.acquireTimeout = self.databaseAcquireTimeout
        configuration.applicationName = applicationName
        configuration.poolMode = self.databasePoolMode
        // The sign-up limits, for the SQL that enforces them without the server (public.create_guest_user over RPC).
        configuration.sessionSettings = [
            "guestpass.signup_ip_burst": String(self.auth.signupBurstPerIP),
            "guestpass.signup_ip_rate_per_hour": String(self.auth.signupsPerHourPerIP),
            "guestpass.signup_app_burst": String(self.auth.signupBurstPerApp),
            "guestpass.signup_app_rate_per_hour": String(self.auth.signupsPerHourPerApp),
        ]
        return configuration
    }
}

/// A configuration value is missing or malformed.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
