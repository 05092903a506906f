import CLibPQ
import Foundation

/// One PostgreSQL connection over libpq. Owns its `PGconn`, which `PQfinish` frees on every path (failed connects
/// included) when the connection is released.
///
/// **Threading.** Every method blocks the calling thread (socket waits use `poll(2)` with a deadline, on a
/// non-blocking libpq connection, so nothing waits forever). Callers must run them on a thread that may block —
/// the pool runs them on its own `NIOThreadPool`, never on Swift's cooperative pool. `@unchecked Sendable`
/// because libpq forbids two threads using one `PGconn` at once: the pool hands a connection to exactly one
/// borrower at a time, so no two calls overlap.
public final class PostgresConnection: @unchecked Sendable {
    /// PQtransactionStatus, as a Swift value.
    public enum TransactionStatus: Sendable {
        case idle, active, inTransaction, inError, unknown
    }

    let handle: ConnectionHandle
    /// How long any one round trip may take before the connection is given up as broken.
    let ioTimeout: Duration
    /// When the connection was established.
    public let createdAt = ContinuousClock.now
    /// When the connection was last handed back to the pool.
    var lastReleasedAt = ContinuousClock.now
    /// Set when the connection failed at the protocol or socket level; it must not be reused.
    public internal(set) var isBroken = false
    private var traceFile: UnsafeMutablePointer<FILE>?
    /// Statements prepared on this session (SQL text → statement name), for `reusesPlan` and `reusesPlanWhileRoom`
    /// statements.
    var preparedStatements: [String: String] = [:]
    /// At most this many statements are kept prepared per session (none in `.transaction` pool mode); a
    /// `reusesPlanWhileRoom` statement is prepared only while fewer than half of them are.
    let preparedStatementLimit: Int
    /// The statement that opens each request transaction by setting the caller's identity (and, in `.transaction`
    /// pool mode, the session's settings), with the settings' names and values: built once per connection.
    let identityFrame: (sql: String, settings: [any PostgresEncodable])

    /// Connects (blocking) to the server described by `configuration`.
    public init(configuration: PostgresConfiguration) throws {
        var keywords = ["connect_timeout", "application_name", "client_encoding"]
        var values = [String(max(1, Int(configuration.connectTimeout.components.seconds))), configuration.applicationName, "UTF8"]
        switch configuration.poolMode {
        case .session:
            keywords.append("options")
            values.append(configuration.sessionOptions)
            self.preparedStatementLimit = 256
            self.identityFrame = Self.identityFrame(settings: [])
        case .transaction:
            self.preparedStatementLimit = 0
            self.identityFrame = Self.identityFrame(settings: configuration.settings)
        }
        // Values from the URL come last so that they win over our defaults (libpq: the last occurrence wins).
        keywords.append("dbname")
        values.append(configuration.url)
        let pointer = withCStringArray(keywords) { keywordPointers in
            withCStringArray(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let pointer else { throw PostgresError(.connectionFailed, message: "libpq could not allocate a connection") }
        self.handle = ConnectionHandle(pointer)
        self.ioTimeout = configuration.ioTimeout
        guard PQstatus(pointer) == CONNECTION_OK else {
            throw PostgresError(.connectionFailed, message: self.handle.errorMessage)
        }
        PQsetNoticeProcessor(pointer, { _, _ in }, nil)
        guard PQsetnonblocking(pointer, 1) == 0 else {
            throw PostgresError(.connectionFailed, message: "could not switch to non-blocking mode: \(self.handle.errorMessage)")
        }
    }

    deinit {
        self.stopProtocolTrace()
    }

    // MARK: State

    /// The libpq transaction status of the session.
    public var transactionStatus: TransactionStatus {
        if self.isBroken || PQstatus(self.handle.pointer) != CONNECTION_OK { return .unknown }
        switch PQtransactionStatus(self.handle.pointer) {
        case PQTRANS_IDLE: return .idle
        case PQTRANS_ACTIVE: return .active
        case PQTRANS_INTRANS: return .inTransaction
        case PQTRANS_INERROR: return .inError
        default: return .unknown
        }
    }

    /// The server process id of this session (`pg_backend_pid()`).
    public var backendPID: Int32 { PQbackendPID(self.handle.pointer) }

    // MARK: Statements

    /// Runs one statement with bound parameters (extended protocol) and returns its result.
    @discardableResult
    public func execute(_ statement: PostgresStatement) throws -> PostgresResult {
        let deadline = ContinuousClock.now + self.ioTimeout
        try self.send(statement)
        try self.flush(deadline: deadline)
        return try self.lastResult(self.drainResults(deadline: deadline))
    }

    /// Queues one statement with bound parameters (extended protocol); nothing is flushed yet.
    func send(_ statement: PostgresStatement) throws {
        let sent = withParameters(statement.parameters) { count, types, values, lengths, formats in
            PQsendQueryParams(self.handle.pointer, statement.sql, count, types, values, lengths, formats, 0)
        }
        guard sent == 1 else { throw self.fail(.protocolViolation, "could not send statement") }
    }

    /// A statement's answer: the last of its results.
    func lastResult(_ results: [PostgresResult]) throws -> PostgresResult {
        guard let last = results.last else { throw self.fail(.protocolViolation, "no result for statement") }
        return last
    }

    /// Runs one statement with bound parameters.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [any PostgresEncodable] = []) throws -> PostgresResult {
        try self.execute(PostgresStatement(sql, parameters))
    }

    /// Runs SQL text that may hold several statements (simple protocol, no parameters) — migration files.
    /// Outside an explicit transaction the server runs them as one implicit transaction.
    @discardableResult
    public func executeScript(_ sql: String) throws -> [PostgresResult] {
        let deadline = ContinuousClock.now + self.ioTimeout
        guard PQsendQuery(self.handle.pointer, sql) == 1 else { throw self.fail(.protocolViolation, "could not send script") }
        try self.flush(deadline: deadline)
        return try self.drainResults(deadline: deadline)
    }

    /// A cheap liveness probe: an empty query, one round trip.
    public func ping() -> Bool {
        do {
            _ = try self.executeScript("")
            return self.transactionStatus == .idle
        } catch {
            return false
        }
    }

    // MARK: Notifications

    /// A `NOTIFY` this connection received (it must have run `LISTEN channel`).
    public struct Notification: Sendable, Equatable {
        public let channel: String
        public let payload: String
    }

    /// Waits up to `timeout` for notifications and returns those that arrived (empty when none did). Throws when the
    /// connection is lost, so a listener can reconnect.
    public func notifications(waitingUpTo timeout: Duration) throws -> [Notification] {
        let pointer = self.handle.pointer
        var received = self.takeNotifications()
        guard received.isEmpty else { return received }
        let socket = PQsocket(pointer)
        guard socket >= 0 else { throw self.fail(.connectionLost, "connection has no socket") }
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, max(0, milliseconds))
        if ready < 0, errno != EINTR { throw self.fail(.connectionLost, "poll failed: \(String(cString: strerror(errno)))") }
        if ready > 0 {
            guard PQconsumeInput(pointer) == 1 else { throw self.fail(.connectionLost, self.handle.errorMessage) }
            received = self.takeNotifications()
        }
        return received
    }

    private func takeNotifications() -> [Notification] {
        var received: [Notification] = []
        while let notify = PQnotifies(self.handle.pointer) {
            received.append(Notification(channel: String(cString: notify.pointee.relname), payload: String(cString: notify.pointee.extra)))
            PQfreemem(notify)
        }
        return received
    }

    // MARK: Protocol trace (tests)

    /// Writes libpq's protocol trace (every message sent and received) to `path` until `stopProtocolTrace()`.
    public func startProtocolTrace(path: String) {
        self.stopProtocolTrace()
        guard let file = fopen(path, "w") else { return }
        self.traceFile = file
        PQtrace(self.handle.pointer, file)
        PQsetTraceFlags(self.handle.pointer, PQTRACE_SUPPRESS_TIMESTAMPS)
    }

    /// Stops the protocol trace and closes its file.
    public func stopProtocolTrace() {
        guard let file = self.traceFile else { return }
        PQuntrace(self.handle.pointer)
        fclose(file)
        self.traceFile = nil
    }

    // MARK: Socket work

    /// Collects every result of the current command until libpq reports the end; throws the first server error.
    private func drainResults(deadline: ContinuousClock.Instant) throws -> [PostgresResult] {
        var results: [PostgresResult] = []
        var firstError: PostgresError?
        while let result = try self.nextResult(deadline: deadline) {
            try self.take(result, into: &results, firstError: &firstError)
        }
        if let firstError { throw firstError }
        return results
    }

    /// Keeps a command's result, or its error (the first one counts), freeing what is not kept.
    func take(_ result: OpaquePointer, into results: inout [PostgresResult], firstError: inout PostgresError?) throws {
        switch PQresultStatus(result) {
        case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR, PGRES_BAD_RESPONSE:
            firstError = firstError ?? Self.serverError(result)
            PQclear(result)
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            PQclear(result)
            throw self.fail(.protocolViolation, "COPY is not supported")
        default:
            results.append(PostgresResult(taking: result))
        }
    }

    /// The next result, reading from the socket as needed; `nil` marks the end of one command's results.
    private func nextResult(deadline: ContinuousClock.Instant) throws -> OpaquePointer? {
        let pointer = self.handle.pointer
        while PQisBusy(pointer) == 1 {
            try self.waitForSocket(write: false, deadline: deadline)
            guard PQconsumeInput(pointer) == 1 else { throw self.fail(.connectionLost, self.handle.errorMessage) }
        }
        return PQgetResult(pointer)
    }

    /// Flushes libpq's output buffer, reading input meanwhile so the server never blocks on a full socket.
    func flush(deadline: ContinuousClock.Instant) throws {
        let pointer = self.handle.pointer
        while true {
            let status = PQflush(pointer)
            if status == 0 { return }
            if status < 0 { throw self.fail(.connectionLost, self.handle.errorMessage) }
            let readable = try self.waitForSocket(write: true, deadline: deadline)
            if readable, PQconsumeInput(pointer) != 1 { throw self.fail(.connectionLost, self.handle.errorMessage) }
        }
    }

    /// Waits until the socket is readable (or writable, when `write`); returns whether it is readable.
    @discardableResult
    func waitForSocket(write: Bool, deadline: ContinuousClock.Instant) throws -> Bool {
        let socket = PQsocket(self.handle.pointer)
        guard socket >= 0 else { throw self.fail(.connectionLost, "connection has no socket") }
        var events = Int16(POLLIN)
        if write { events |= Int16(POLLOUT) }
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                throw self.fail(.timeout, "no answer from the server within \(self.ioTimeout)")
            }
            let milliseconds = Int32(min(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw self.fail(.connectionLost, "poll failed: \(String(cString: strerror(errno)))")
            }
            if ready == 0 { continue }
            if descriptor.revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 { return true }
            return false
        }
    }

    /// Marks the connection broken and builds the error to throw.
    func fail(_ kind: PostgresError.Kind, _ message: String) -> PostgresError {
        self.isBroken = true
        // A step that failed because the connection died (a server shut down mid-exchange, a dropped socket) is a lost
        // connection, which the callers retry or answer 503, not a protocol violation (500).
        if kind == .protocolViolation, PQstatus(self.handle.pointer) == CONNECTION_BAD {
            return PostgresError(.connectionLost, message: "\(message): \(self.handle.errorMessage)")
        }
        return PostgresError(kind, message: message)
    }

    /// A typed error from an error result's diagnostic fields.
    static func serverError(_ result: OpaquePointer) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let message = field("M") ?? String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
        return PostgresError(
            .server, message: message, sqlState: field("C").map(SQLState.init(rawValue:)), detail: field("D"),
            hint: field("H"), constraint: field("n"), schema: field("s"), table: field("t"), column: field("c")
        )
    }
}

/// The owner of one `PGconn`: `PQfinish` runs exactly once, when the owner goes, whatever state the connection is in.
final class ConnectionHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { PQfinish(self.pointer) }

    /// libpq's last error message for this connection, trimmed.
    var errorMessage: String {
        String(cString: PQerrorMessage(self.pointer)).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Calls `body` with a NULL-terminated array of C strings that lives only for the call.
private func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// Calls `body` with libpq's parallel parameter arrays (count, types, values, lengths, formats), valid only for the call.
/// Every array and every value's bytes (text NUL-terminated) live in temporary allocations for the call — on the stack
/// when small — rather than one heap copy per value: a request transaction binds a dozen values or more.
func withParameters<R>(
    _ parameters: [PostgresParameter],
    _ body: (Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R
) -> R {
    if parameters.isEmpty { return body(0, nil, nil, nil, nil) }
    let count = parameters.count
    var byteCount = 0
    for parameter in parameters {
        switch parameter.storage {
        case .null: break
        case .text(let text): byteCount += text.utf8.count + 1
        case .binary(let bytes): byteCount += bytes.count
        }
    }
    return withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(1, byteCount)) { bytes in
        withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: count) { values in
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: 2 * count) { lengthsAndFormats in
                withUnsafeTemporaryAllocation(of: Oid.self, capacity: count) { types in
                    var offset = 0
                    for (index, parameter) in parameters.enumerated() {
                        types[index] = Oid(parameter.typeOID)
                        let start = bytes.baseAddress! + offset
                        switch parameter.storage {
                        case .null:
                            values[index] = nil
                            lengthsAndFormats[index] = 0
                            lengthsAndFormats[count + index] = 0
                        case .text(let text):
                            let written = text.utf8.count
                            UnsafeMutableRawBufferPointer(start: start, count: written).copyBytes(from: text.utf8)
                            start[written] = 0
                            values[index] = UnsafePointer(start)
                            lengthsAndFormats[index] = 0
                            lengthsAndFormats[count + index] = 0
                            offset += written + 1
                        case .binary(let data):
                            data.withUnsafeBytes { raw in
                                if let base = raw.baseAddress { UnsafeMutableRawPointer(start).copyMemory(from: base, byteCount: data.count) }
                            }
                            values[index] = UnsafePointer(start)
                            lengthsAndFormats[index] = Int32(data.count)
                            lengthsAndFormats[count + index] = 1
                            offset += data.count
                        }
                    }
                    let lengths = UnsafePointer(lengthsAndFormats.baseAddress!)
                    return body(Int32(count), UnsafePointer(types.baseAddress!), UnsafePointer(values.baseAddress!), lengths, lengths + count)
                }
            }
        }
    }
}
