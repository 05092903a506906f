public import Logging
import NIOPosix
public import ServiceLifecycle

/// A bounded pool of libpq connections.
///
/// - Borrowers wait (asynchronously, FIFO) for a free connection, up to `acquireTimeout`.
/// - A connection idle longer than `healthCheckAfterIdle`, or any idle connection after another one was found
///   broken, is probed before it is handed out; dead ones are replaced, so the pool heals itself after a server restart.
/// - On hand-back the transaction status decides: idle → reuse; in a transaction or failed → `ROLLBACK`, then reuse;
///   active or unknown → close. Connections older than `maxLifetime` are closed.
/// - Request transactions (`requestTransaction`, one round trip in pipeline mode), the bulk of the traffic, run on
///   the calling task's thread without blocking it: libpq is non-blocking, and the task suspends on the pool's
///   `PostgresSocketWaiter` (one epoll thread for every connection; SwiftNIO has no public API for readiness events
///   on a socket another library owns) until PostgreSQL answers; so do batches (`requestTransactions`) and single
///   statements (`execute`). Every other libpq call — connecting, probing, rolling back, scripts, work through
///   `withConnection` + `run` — blocks, so it runs on the pool's own `NIOThreadPool` (one thread per connection),
///   never on an event loop or Swift's cooperative pool.
public final class PostgresPool: Service, Sendable {
    public let configuration: PostgresConfiguration
    let threadPool: NIOThreadPool
    /// Where request transactions wait for PostgreSQL; nil where there is no epoll set (not Linux, or the system
    /// refused one): they then block a pool thread, as the other calls do.
    let socketWaiter: PostgresSocketWaiter?
    private let state: PoolState

    public init(configuration: PostgresConfiguration, logger: Logger = Logger(label: "guestpass.postgres")) {
        self.configuration = configuration
        self.threadPool = NIOThreadPool(numberOfThreads: max(1, configuration.maxConnections))
        self.threadPool.start()
        self.socketWaiter = try? PostgresSocketWaiter()
        self.state = PoolState(configuration: configuration, threadPool: self.threadPool, logger: logger)
    }

    /// Counts for health reporting and tests.
    public var statistics: (open: Int, idle: Int, waiting: Int) {
        get async { await self.state.statistics }
    }

    // MARK: Borrowing

    /// Borrows a connection for the duration of `body` and hands it back afterwards, whatever happens.
    public func withConnection<R>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (PooledConnection) async throws -> R
    ) async throws -> R {
        let connection = try await self.state.acquire()
        let pooled = PooledConnection(connection: connection, threadPool: self.threadPool, socketWaiter: self.socketWaiter)
        return try await withCleanup {
            try await body(pooled)
        } cleanup: {
            await self.checkIn(connection)
        }
    }

    /// Runs one statement on any connection.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> PostgresResult {
        try await self.withConnection { try await $0.execute(sql, parameters) }
    }

    /// Runs a multi-statement script (simple protocol) on any connection: set-up and DDL, one round trip.
    @discardableResult
    public func executeScript(_ sql: String) async throws -> [PostgresResult] {
        try await self.withConnection { try await $0.executeScript(sql) }
    }

    // MARK: Hand-back

    /// Returns the connection or closes it, by psycopg_pool's rule: idle → keep; in a transaction or failed →
    /// ROLLBACK, then keep if that worked; active/unknown → close. Reading the status is local (no I/O), so the usual
    /// case, an idle connection, goes back without a hop to the pool's threads; only a ROLLBACK (blocking) takes one.
    private func checkIn(_ connection: PostgresConnection) async {
        connection.stopProtocolTrace()
        let reusable: Bool
        switch connection.transactionStatus {
        case .idle:
            reusable = true
        case .inTransaction, .inError:
            reusable = (try? await self.threadPool.runIfActive { Self.rollBack(connection) }) ?? false
        case .active, .unknown:
            reusable = false
        }
        await self.state.giveBack(connection, reusable: reusable)
    }

    /// Ends a transaction left open or failed; whether the session is idle and reusable afterwards.
    private static func rollBack(_ connection: PostgresConnection) -> Bool {
        guard (try? connection.execute("ROLLBACK")) != nil else { return false }
        return connection.transactionStatus == .idle
    }

    // MARK: Lifecycle

    /// Runs until graceful shutdown, then closes every connection.
    public func run() async throws {
        try? await gracefulShutdown()
        await self.shutdown()
    }

    /// Closes idle connections, fails waiters, and stops the worker threads. Borrowed connections close on hand-back.
    public func shutdown() async {
        guard await self.state.close() else { return }
        try? await self.threadPool.shutdownGracefully()
        self.socketWaiter?.stop()
    }
}

/// The pool's bookkeeping: idle connections, capacity, and FIFO waiters.
private actor PoolState {
    let configuration: PostgresConfiguration
    let threadPool: NIOThreadPool
    private let logger: Logger

    private struct IdleConnection {
        let connection: PostgresConnection
        var needsProbe: Bool
    }

    private enum Grant {
        case connection(PostgresConnection)
        /// Capacity was reserved for the waiter; it opens its own connection.
        case slot
    }

    private var idle: [IdleConnection] = []
    private var openCount = 0
    private var waiters: [UInt64: CheckedContinuation<Grant, any Error>] = [:]
    private var waiterOrder: [UInt64] = []
    private var nextWaiterID: UInt64 = 0
    private var isClosed = false

    init(configuration: PostgresConfiguration, threadPool: NIOThreadPool, logger: Logger) {
        self.configuration = configuration
        self.threadPool = threadPool
        self.logger = logger
    }

    var statistics: (open: Int, idle: Int, waiting: Int) { (self.openCount, self.idle.count, self.waiters.count) }

    func acquire() async throws -> PostgresConnection {
        while true {
            guard !self.isClosed else { throw PostgresError(.poolClosed, message: "the connection pool is shut down") }
            if let entry = self.idle.popLast() {
                let connection = entry.connection
                if self.isExpired(connection) {
                    self.discard(connection)
                    continue
                }
                if entry.needsProbe || ContinuousClock.now - connection.lastReleasedAt > self.configuration.healthCheckAfterIdle {
                    let alive = (try? await self.threadPool.runIfActive { connection.ping() }) ?? false
                    guard alive else {
                        self.logger.debug("discarding dead pooled connection")
                        self.discard(connection)
                        self.markIdleForProbe()
                        continue
                    }
                }
                return connection
            }
            if self.openCount < self.configuration.maxConnections {
                self.openCount += 1
                return try await self.openReservedConnection()
            }
            switch try await self.waitForGrant() {
            case .connection(let connection): return connection
            case .slot: return try await self.openReservedConnection()
            }
        }
    }

    /// Opens a connection for capacity already counted in `openCount`; gives the capacity back on failure.
    private func openReservedConnection() async throws -> PostgresConnection {
        do {
            let configuration = self.configuration
            return try await self.threadPool.runIfActive { try PostgresConnection(configuration: configuration) }
        } catch {
            self.openCount -= 1
            self.handOffFreedSlot()
            self.logger.warning("could not connect to PostgreSQL", metadata: ["db.error": "\(error)"])
            throw error
        }
    }

    private func waitForGrant() async throws -> Grant {
        let id = self.nextWaiterID
        self.nextWaiterID += 1
        let timeout = self.configuration.acquireTimeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            await self?.expireWaiter(id)
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            self.waiters[id] = continuation
            self.waiterOrder.append(id)
        }
    }

    private func expireWaiter(_ id: UInt64) {
        guard let continuation = self.waiters.removeValue(forKey: id) else { return }
        continuation.resume(
            throwing: PostgresError(.acquireTimeout, message: "no database connection became free within \(self.configuration.acquireTimeout)")
        )
    }

    private func popWaiter() -> CheckedContinuation<Grant, any Error>? {
        while !self.waiterOrder.isEmpty {
            let id = self.waiterOrder.removeFirst()
            if let continuation = self.waiters.removeValue(forKey: id) { return continuation }
        }
        return nil
    }

    // MARK: Hand-back

    func giveBack(_ connection: PostgresConnection, reusable: Bool) {
        guard reusable, !self.isClosed, !self.isExpired(connection) else {
            if !reusable { self.markIdleForProbe() }
            self.discard(connection)
            return
        }
        connection.lastReleasedAt = .now
        if let waiter = self.popWaiter() {
            waiter.resume(returning: .connection(connection))
        } else {
            self.idle.append(IdleConnection(connection: connection, needsProbe: false))
        }
    }

    /// Drops a connection and lets a waiter use the freed capacity. The connection's last reference is dropped on the
    /// pool's thread, so `PQfinish` (which may write a Terminate message to the socket) never runs on this actor.
    private func discard(_ connection: PostgresConnection) {
        self.openCount -= 1
        self.handOffFreedSlot()
        self.threadPool.submit { _ in withExtendedLifetime(connection) {} }
    }

    private func handOffFreedSlot() {
        guard !self.isClosed, self.openCount < self.configuration.maxConnections, let waiter = self.popWaiter() else { return }
        self.openCount += 1
        waiter.resume(returning: .slot)
    }

    /// After one connection turned out broken, the others probably are too (server restart): probe each before use.
    private func markIdleForProbe() {
        for index in self.idle.indices { self.idle[index].needsProbe = true }
    }

    private func isExpired(_ connection: PostgresConnection) -> Bool {
        let jitter = Double(UInt(bitPattern: ObjectIdentifier(connection).hashValue) % 1000) / 10_000  // 0–10 %
        return ContinuousClock.now - connection.createdAt > self.configuration.maxLifetime * (1 - jitter)
    }

    // MARK: Lifecycle

    /// Marks the pool closed, drops idle connections and fails waiters; false if it was already closed.
    func close() -> Bool {
        guard !self.isClosed else { return false }
        self.isClosed = true
        self.openCount -= self.idle.count
        self.idle.removeAll()
        while let waiter = self.popWaiter() {
            waiter.resume(throwing: PostgresError(.poolClosed, message: "the connection pool is shut down"))
        }
        return true
    }
}

/// A borrowed connection. Its async methods run the blocking libpq work on the pool's threads.
public struct PooledConnection: Sendable {
    let connection: PostgresConnection
    let threadPool: NIOThreadPool
    let socketWaiter: PostgresSocketWaiter?

    /// Runs blocking work against the connection on a pool thread.
    public func run<R: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> R) async throws -> R {
        let connection = self.connection
        return try await self.threadPool.runIfActive { try body(connection) }
    }

    /// Runs one statement with bound parameters: without blocking a thread where the pool has a
    /// `PostgresSocketWaiter`, else on a pool thread.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> PostgresResult {
        let statement = PostgresStatement(sql, parameters)
        return try await self.waitingOrBlocking {
            try await self.connection.execute(statement, waiter: $0)
        } blocking: {
            try $0.execute(statement)
        }
    }

    /// `waiting` with the pool's `PostgresSocketWaiter`, the thread free meanwhile; where there is none (not Linux, or
    /// the system refused an epoll set), `blocking` on a pool thread.
    func waitingOrBlocking<R: Sendable>(
        _ waiting: (PostgresSocketWaiter) async throws -> R, blocking: @escaping @Sendable (PostgresConnection) throws -> R
    ) async throws -> R {
        if let waiter = self.socketWaiter { return try await waiting(waiter) }
        return try await self.run(blocking)
    }

    /// Runs a multi-statement script (simple protocol).
    @discardableResult
    public func executeScript(_ sql: String) async throws -> [PostgresResult] {
        try await self.run { try $0.executeScript(sql) }
    }

    /// The server's process id for this session.
    public var backendPID: Int32 { self.connection.backendPID }
}

/// Runs `body` with `pool`, then shuts the pool down, awaited, whether `body` returns or throws: the scope of a pool
/// that is not run as a service (commands, tests, set-up).
public func withShutdown<R: Sendable>(_ pool: PostgresPool, _ body: (PostgresPool) async throws -> R) async throws -> R {
    try await withCleanup {
        try await body(pool)
    } cleanup: {
        await pool.shutdown()
    }
}

/// Runs `body`, then `cleanup`, awaited, whether `body` returns or throws (what a `defer` would do, were it allowed to
/// await); answers what `body` answered, or rethrows its error.
public func withCleanup<R>(
    isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> R, cleanup: () async -> Void
) async throws -> R {
    do {
        let result = try await body()
        await cleanup()
        return result
    } catch {
        await cleanup()
        throw error
    }
}
