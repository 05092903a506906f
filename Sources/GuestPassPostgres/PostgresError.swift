/// An error from the data layer: a server error with its diagnostic fields, or a client-side failure.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, broadly.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { self.name }

        /// The server answered a statement with an error (see `sqlState`).
        public static let server = Kind("server")
        /// A connection could not be established.
        public static let connectionFailed = Kind("connectionFailed")
        /// An established connection broke (server restart, network failure).
        public static let connectionLost = Kind("connectionLost")
        /// The client-side deadline for a statement or round trip passed.
        public static let timeout = Kind("timeout")
        /// No pooled connection became free within the pool's acquire timeout.
        public static let acquireTimeout = Kind("acquireTimeout")
        /// The pool has shut down.
        public static let poolClosed = Kind("poolClosed")
        /// A value could not be decoded into the requested Swift type.
        public static let decoding = Kind("decoding")
        /// libpq refused a call or the server sent something unexpected.
        public static let protocolViolation = Kind("protocolViolation")
    }

    public let kind: Kind
    /// The SQLSTATE, for `.server` errors (and connection errors the server reported).
    public let sqlState: SQLState?
    public let message: String
    public let detail: String?
    public let hint: String?
    public let constraint: String?
    public let schema: String?
    public let table: String?
    public let column: String?

    public init(
        _ kind: Kind, message: String, sqlState: SQLState? = nil, detail: String? = nil, hint: String? = nil,
        constraint: String? = nil, schema: String? = nil, table: String? = nil, column: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
        self.schema = schema
        self.table = table
        self.column = column
    }

    /// Whether the failure means the connection (or the server) is gone, so a retry on a new connection may work.
    public var isConnectionError: Bool {
        switch self.kind {
        case .connectionFailed, .connectionLost, .timeout: return true
        default:
            guard let state = self.sqlState else { return false }
            return state.errorClass == "08" || state == .adminShutdown || state == .cannotConnectNow
        }
    }

    public var description: String {
        var text = "PostgresError(\(self.kind)"
        if let sqlState { text += ", \(sqlState)" }
        text += "): \(self.message)"
        if let constraint { text += " [constraint \(constraint)]" }
        if let detail { text += " — \(detail)" }
        return text
    }
}
