/// Where and how to hand mail over: an SMTP relay, its transport security, credentials and a time limit.
///
/// **Design.** TLS is required by default: `.startTLS` makes libcurl refuse to go on unless the server upgrades the
/// connection (`CURLOPT_USE_SSL = CURLUSESSL_ALL`), `.implicitTLS` speaks TLS from the first byte (`smtps://`). The
/// certificate is always verified (peer and host name); `caFile` replaces the system's CA bundle for a relay with a
/// private CA. `.plain` sends in clear text and is accepted only for a loopback host (`localhost`, `127.0.0.0/8`,
/// `::1`): a local mail catcher or relay.
///
/// The host is checked so that it cannot change the URL libcurl is given (no `/`, `@`, `?`, `#`, space or control
/// character). The description never shows the password. Settings are a dictionary key of `SMTPClient`'s idle
/// connections, so two equal settings share connections.
public struct SMTPSettings: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// How the connection is secured.
    public enum Security: String, Sendable, Hashable, CaseIterable {
        /// Plain SMTP upgraded with STARTTLS, which is required (default port 587).
        case startTLS
        /// TLS from the start, `smtps://` (default port 465).
        case implicitTLS
        /// No TLS at all (default port 25); loopback hosts only.
        case plain

        /// The port used when none is given.
        public var defaultPort: Int {
            switch self {
            case .startTLS: return 587
            case .implicitTLS: return 465
            case .plain: return 25
            }
        }
    }

    /// A host name or an IP address (an IPv6 address with or without brackets).
    public let host: String
    public let port: Int
    public let username: String?
    public let password: String?
    public let security: Security
    /// A PEM file of CA certificates to trust instead of the system's (`CURLOPT_CAINFO`).
    public let caFile: String?
    /// The limit for connecting and, separately, for a whole send (connect, TLS, AUTH, the message, the reply).
    public let timeout: Duration

    /// Checks and keeps the settings; `port` defaults to `security.defaultPort`.
    public init(
        host: String,
        port: Int? = nil,
        username: String? = nil,
        password: String? = nil,
        security: Security = .startTLS,
        caFile: String? = nil,
        timeout: Duration = .seconds(30)
    ) throws(MailValidationError) {
        self.host = host
        self.port = port ?? security.defaultPort
        self.username = username
        self.password = password
        self.security = security
        self.caFile = caFile
        self.timeout = timeout
        try self.validate()
    }

    /// Throws when the settings could not be used safely: a malformed host or port, credentials or a CA path with a
    /// control character, a timeout outside 1 ms … 1 h, or `.plain` to a host that is not loopback.
    public func validate() throws(MailValidationError) {
        guard !self.host.isEmpty, self.host.utf8.count <= 253,
            self.host.utf8.allSatisfy({ byte in
                byte > 0x20 && byte < 0x7F && !"/@?#%\\\"<>".utf8.contains(byte)
            })
        else {
            throw MailValidationError(field: "host", reason: "the host must be a host name or an IP address")
        }
        let bare = self.bareHost
        if bare.contains(":") {
            guard bare.utf8.allSatisfy({ $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") || Self.isHexDigit($0) }) else {
                throw MailValidationError(field: "host", reason: "\(self.host) is not a valid IPv6 address")
            }
        } else {
            guard !bare.isEmpty, !self.host.contains("["), !self.host.contains("]") else {
                throw MailValidationError(field: "host", reason: "\(self.host) is not a valid host")
            }
        }
        guard (1...65_535).contains(self.port) else {
            throw MailValidationError(field: "port", reason: "the port must be 1 to 65535")
        }
        for (field, value) in [("username", self.username), ("password", self.password), ("CA file", self.caFile)] {
            if let value, value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
                throw MailValidationError(field: field, reason: "the \(field) holds a control character")
            }
        }
        guard self.timeout >= .milliseconds(1), self.timeout <= .seconds(3600) else {
            throw MailValidationError(field: "timeout", reason: "the timeout must be between 1 ms and 1 hour")
        }
        if self.security == .plain && !self.isLoopback {
            throw MailValidationError(
                field: "security",
                reason: "plain SMTP (no TLS) is allowed only to a loopback host, not to \(self.host)"
            )
        }
    }

    /// The host without IPv6 brackets.
    var bareHost: String {
        self.host.hasPrefix("[") && self.host.hasSuffix("]") ? String(self.host.dropFirst().dropLast()) : self.host
    }

    /// Whether the host is `localhost`, an address of `127.0.0.0/8` or `::1`.
    public var isLoopback: Bool {
        let host = self.bareHost.lowercased()
        if host == "localhost" || host == "localhost." || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            guard let value = Int(octet), octet.count <= 3 else { return false }
            return (0...255).contains(value)
        }
    }

    /// The URL handed to libcurl: `smtp://host:port` or `smtps://host:port` (IPv6 in brackets).
    var url: String {
        let scheme = self.security == .implicitTLS ? "smtps" : "smtp"
        let host = self.bareHost.contains(":") ? "[\(self.bareHost)]" : self.host
        return "\(scheme)://\(host):\(self.port)"
    }

    public var description: String {
        var parts = ["\(self.url)", "\(self.security)"]
        if let username { parts.append("username: \(username)") }
        if self.password != nil { parts.append("password: <redacted>") }
        if let caFile { parts.append("caFile: \(caFile)") }
        parts.append("timeout: \(self.timeout)")
        return "SMTPSettings(\(parts.joined(separator: ", ")))"
    }

    public var debugDescription: String { self.description }

    /// What `dump` and debuggers show: every field but the password, which shows as `<redacted>`.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "host": self.host, "port": self.port, "username": self.username as Any,
                "password": self.password == nil ? "nil" : "<redacted>", "security": self.security, "caFile": self.caFile as Any,
                "timeout": self.timeout,
            ],
            displayStyle: .struct
        )
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): return true
        default: return false
        }
    }
}
