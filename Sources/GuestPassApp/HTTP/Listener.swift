/// One socket a `guestpass` command listens on, named for whoever has to move it: what it serves, the address it binds
/// and the setting that changes that address. A failure to bind (`ListenerError`) names all three, so a second server
/// on a taken port says which listener, where, and what to set, instead of a bare `bind(2)` errno.
public struct Listener: Sendable, Equatable, CustomStringConvertible {
    /// What it serves, for people: "API listener", "metrics listener", "apple-standin listener".
    public var name: String
    /// The host or address it binds (a name is resolved as Hummingbird resolves it).
    public var host: String
    /// The port it binds (0: one the system picks).
    public var port: Int
    /// What moves it: environment variables or command-line options, e.g. `GUESTPASS_METRICS_ADDRESS`.
    public var setting: String

    public init(name: String, host: String, port: Int, setting: String) {
        self.name = name
        self.host = host
        self.port = port
        self.setting = setting
    }

    /// `<name> <host>:<port> (<setting>)`, an IPv6 address in brackets: `metrics listener 127.0.0.1:9464
    /// (GUESTPASS_METRICS_ADDRESS)`.
    public var description: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "\(self.name) \(host):\(self.port) (\(self.setting))"
    }
}

extension AppConfiguration {
    /// The environment variables that place `serve`'s listeners: one spelling each, read by `init(environment:)` and
    /// named in a `ListenerError`.
    public enum ListenerVariable {
        /// The API's bind address.
        public static let host = "GUESTPASS_HOST"
        /// The API's port.
        public static let port = "GUESTPASS_PORT"
        /// The metrics listener's `host:port`, or `off`.
        public static let metricsAddress = "GUESTPASS_METRICS_ADDRESS"
        /// The operator console's `host:port`, or `off`.
        public static let consoleAddress = "GUESTPASS_CONSOLE_ADDRESS"
    }

    /// The API's listener (`GUESTPASS_HOST`, `GUESTPASS_PORT`).
    public var apiListener: Listener {
        Listener(name: "API listener", host: self.host, port: self.port, setting: "\(ListenerVariable.host)/\(ListenerVariable.port)")
    }

    /// The Prometheus listener (`GUESTPASS_METRICS_ADDRESS`); nil when it is `off`.
    public var metricsListener: Listener? {
        self.metricsAddress.map { Listener(name: "metrics listener", host: $0.host, port: $0.port, setting: ListenerVariable.metricsAddress) }
    }

    /// The operator console's listener (`GUESTPASS_CONSOLE_ADDRESS`); nil when it is `off` or the console has no
    /// database URL.
    public var consoleListener: Listener? {
        guard self.consoleDatabaseURL != nil else { return nil }
        return self.consoleAddress.map { Listener(name: "console listener", host: $0.host, port: $0.port, setting: ListenerVariable.consoleAddress) }
    }

    /// Every listener `serve` opens, the API's first.
    public var listeners: [Listener] {
        [self.apiListener] + (self.metricsListener.map { [$0] } ?? []) + (self.consoleListener.map { [$0] } ?? [])
    }
}
