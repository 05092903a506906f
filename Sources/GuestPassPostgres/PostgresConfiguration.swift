/// How to reach PostgreSQL and how the pool behaves.
public struct PostgresConfiguration: Sendable {
    /// What sits behind `url`, which decides whether anything may outlive a transaction.
    public enum PoolMode: String, Sendable {
        /// PostgreSQL itself (or PgBouncer with `pool_mode = session`): one server session per connection. The
        /// settings go once in the startup packet and hot statements are prepared once per session.
        case session
        /// PgBouncer with `pool_mode = transaction`: two transactions of one connection may run on two server
        /// sessions, so nothing may outlive a transaction. No named prepared statements (PgBouncer before 1.21 cannot
        /// carry them) and no startup `options` (PgBouncer refuses them); the settings travel inside every request
        /// transaction as transaction-local `set_config` calls instead.
        case transaction
    }

    /// A libpq connection URL or conninfo string (`DATABASE_URL`).
    public var url: String
    /// `application_name` reported to the server.
    public var applicationName: String = "guestpass"
    /// The most connections the pool opens at once.
    public var maxConnections: Int = 8
    /// How long a borrower waits for a free connection before `acquireTimeout`.
    public var acquireTimeout: Duration = .seconds(5)
    /// Server-side `statement_timeout` for every session.
    public var statementTimeout: Duration = .seconds(15)
    /// libpq's `connect_timeout`.
    public var connectTimeout: Duration = .seconds(5)
    /// Client-side limit on one round trip; a connection that exceeds it is closed.
    public var ioTimeout: Duration = .seconds(30)
    /// A connection idle longer than this is probed before it is handed out.
    public var healthCheckAfterIdle: Duration = .seconds(5)
    /// Connections older than this (give or take 10 % jitter) are closed when handed back.
    public var maxLifetime: Duration = .seconds(3600)

    /// Extra session settings sent at connect time (`-c name=value`), e.g. `guestpass.signup_ip_burst`: values the
    /// server's SQL reads with `current_setting`. Names are `[a-z_.]`, values `[A-Za-z0-9_.+-]` (no quoting needed);
    /// anything else is left out.
    public var sessionSettings: [String: String] = [:]
    /// `.transaction` behind PgBouncer's transaction pooling (`GUESTPASS_DB_POOL_MODE`).
    public var poolMode: PoolMode = .session

    public init(url: String) {
        self.url = url
    }

    /// The settings every session needs, in order: stable text formats for decoding, the statement timeout, and
    /// `sessionSettings` (names `[a-z_.]`, values `[A-Za-z0-9_.+-]`; anything else is left out).
    var settings: [(name: String, value: String)] {
        let milliseconds =
            self.statementTimeout.components.seconds * 1000
            + self.statementTimeout.components.attoseconds / 1_000_000_000_000_000
        var settings = [
            ("statement_timeout", String(milliseconds)), ("DateStyle", "ISO"), ("TimeZone", "UTC"), ("bytea_output", "hex"),
        ]
        for (name, value) in self.sessionSettings.sorted(by: { $0.key < $1.key })
        where Self.isPlain(name, allowing: "_.") && Self.isPlain(value, allowing: "_.+-") && !name.isEmpty && !value.isEmpty {
            settings.append((name, value))
        }
        return settings
    }

    /// `settings` as libpq's `options` (`-c name=value …`), sent at connect time in `.session` mode.
    var sessionOptions: String {
        self.settings.map { "-c \($0.name)=\($0.value)" }.joined(separator: " ")
    }

    private static func isPlain(_ text: String, allowing extra: String) -> Bool {
        text.unicodeScalars.allSatisfy {
            ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || extra.unicodeScalars.contains($0)
        }
    }
}
