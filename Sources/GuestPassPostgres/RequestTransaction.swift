/// The database roles a request may run as. The role is never taken from client input: the server picks one of
/// these after verifying the caller's API key and token.
public enum DatabaseRole: String, Sendable, CaseIterable {
    case anon
    case authenticated
    case serviceRole = "service_role"
}

/// Who a request runs as inside PostgreSQL: a whitelisted role, the verified claims (`request.jwt.claims`) and the
/// client's address (`request.client_ip`, for rate limits kept in SQL).
public struct RequestIdentity: Sendable {
    public let role: DatabaseRole
    /// The verified claims as a JSON object; read back in SQL through `auth.jwt()`, `auth.uid()`, ….
    public let claimsJSON: String
    /// The client's IP address as the server determined it (socket peer or trusted proxy header); empty if unknown.
    public var clientAddress: String

    public init(role: DatabaseRole, claimsJSON: String, clientAddress: String = "") {
        self.role = role
        self.claimsJSON = claimsJSON
        self.clientAddress = clientAddress
    }
}

extension PostgresConnection {
    /// Runs `statements` as one request transaction in a single round trip:
    /// `BEGIN` → `set_config('role', …, true), set_config('request.jwt.claims', …, true),
    /// set_config('request.client_ip', …, true)` → statements → `COMMIT`, pipelined with one Sync. The settings are
    /// transaction-local, so they end with the transaction (and behind PgBouncer's transaction pooling the session
    /// settings ride along in the same statement).
    ///
    /// - Returns: the results of `statements` only (not of the framing statements).
    public func requestTransaction(
        _ identity: RequestIdentity, readOnly: Bool = false, _ statements: [PostgresStatement]
    ) throws -> [PostgresResult] {
        try self.pipeline(self.framed(identity, readOnly: readOnly, statements), keeping: 2..<(2 + statements.count))
    }

    /// The same transaction without blocking a thread: sent and read on the calling task's thread, which suspends on
    /// `waiter` while PostgreSQL works (`PostgresSocketWaiter`).
    func requestTransaction(
        _ identity: RequestIdentity, readOnly: Bool, _ statements: [PostgresStatement], waiter: PostgresSocketWaiter
    ) async throws -> [PostgresResult] {
        try await self.pipeline(self.framed(identity, readOnly: readOnly, statements), keeping: 2..<(2 + statements.count), waiter: waiter)
    }

    /// `statements` between `BEGIN [READ ONLY]` + the identity statement and `COMMIT` (whose results are not read:
    /// `keeping: 2..<(2 + statements.count)`).
    private func framed(_ identity: RequestIdentity, readOnly: Bool, _ statements: [PostgresStatement]) -> [PostgresStatement] {
        [PostgresStatement(readOnly ? "BEGIN READ ONLY" : "BEGIN", reusesPlan: true), self.identityStatement(identity)] + statements
            + [PostgresStatement("COMMIT", reusesPlan: true)]
    }

    /// Runs several identities' statements in ONE transaction and a single round trip: `BEGIN` → `prelude` →
    /// `SAVEPOINT` → for each step: its identity frame (as `requestTransaction` sets it) → its statements →
    /// `ROLLBACK TO SAVEPOINT` → … → `COMMIT`, pipelined with one Sync.
    ///
    /// Rolling back to the savepoint after each step undoes everything the step set inside the transaction (its
    /// role, its claims, and any transaction-local setting its statements made), so each step starts from the login
    /// role and sees nothing of the steps before it: as separate transactions would, save the snapshot (each
    /// statement takes its own in READ COMMITTED anyway). The prelude's settings hold for every step. Limits: an
    /// error in any step fails the whole batch (one Sync: what follows is skipped), so a caller that must isolate a
    /// failing step reruns the steps one by one; and a `statement_timeout` a prelude sets runs from the first statement
    /// after it to the Sync, so it bounds the whole batch, not one step.
    ///
    /// - Returns: for each step, the results of its statements only.
    public func requestTransactions(
        _ steps: [(identity: RequestIdentity, statements: [PostgresStatement])], readOnly: Bool = false,
        prelude: [PostgresStatement] = []
    ) throws -> [[PostgresResult]] {
        guard !steps.isEmpty else { return [] }
        let framed = self.batchFramed(steps, readOnly: readOnly, prelude: prelude)
        return try Self.batchAnswers(self.pipeline(framed), framedCount: framed.count, steps: steps, preludeCount: prelude.count)
    }

    /// The same batch without blocking a thread, as `requestTransaction(_:readOnly:_:waiter:)`.
    func requestTransactions(
        _ steps: [(identity: RequestIdentity, statements: [PostgresStatement])], readOnly: Bool, prelude: [PostgresStatement],
        waiter: PostgresSocketWaiter
    ) async throws -> [[PostgresResult]] {
        guard !steps.isEmpty else { return [] }
        let framed = self.batchFramed(steps, readOnly: readOnly, prelude: prelude)
        let results = try await self.pipeline(framed, keeping: framed.indices, waiter: waiter)
        return try Self.batchAnswers(results, framedCount: framed.count, steps: steps, preludeCount: prelude.count)
    }

    /// `BEGIN` → prelude → `SAVEPOINT` → each step framed by its identity and the rollback to the savepoint → `COMMIT`.
    private func batchFramed(
        _ steps: [(identity: RequestIdentity, statements: [PostgresStatement])], readOnly: Bool, prelude: [PostgresStatement]
    ) -> [PostgresStatement] {
        var framed = [PostgresStatement(readOnly ? "BEGIN READ ONLY" : "BEGIN", reusesPlan: true)] + prelude
        framed.append(PostgresStatement("SAVEPOINT gp_step", reusesPlan: true))
        for step in steps {
            framed.append(self.identityStatement(step.identity))
            framed += step.statements
            framed.append(PostgresStatement("ROLLBACK TO SAVEPOINT gp_step", reusesPlan: true))
        }
        framed.append(PostgresStatement("COMMIT", reusesPlan: true))
        return framed
    }

    /// Each step's results out of a `batchFramed` pipeline's.
    private static func batchAnswers(
        _ results: [PostgresResult], framedCount: Int, steps: [(identity: RequestIdentity, statements: [PostgresStatement])], preludeCount: Int
    ) throws -> [[PostgresResult]] {
        guard results.count == framedCount else {
            throw PostgresError(.protocolViolation, message: "a batch answered \(results.count) of \(framedCount) statements")
        }
        var answers: [[PostgresResult]] = []
        answers.reserveCapacity(steps.count)
        var index = 2 + preludeCount
        for step in steps {
            index += 1  // the identity frame
            answers.append(Array(results[index..<index + step.statements.count]))
            index += step.statements.count + 1  // and the rollback to the savepoint
        }
        return answers
    }

    /// The framing statement that sets the caller's identity (`$1`–`$3`), and in `.transaction` pool mode the session
    /// settings too (PgBouncer may hand the next transaction another server session, so each one carries its own).
    /// It asks to reuse its plan; the connection prepares nothing in `.transaction` mode, so only the session mode does.
    private func identityStatement(_ identity: RequestIdentity) -> PostgresStatement {
        let frame = self.identityFrame
        return PostgresStatement(
            frame.sql, [identity.role.rawValue, identity.claimsJSON, identity.clientAddress] + frame.settings, reusesPlan: true
        )
    }

    /// The SQL of `identityStatement` and the parameters after the identity's three: `settings` as name/value pairs.
    static func identityFrame(settings: [(name: String, value: String)]) -> (sql: String, settings: [any PostgresEncodable]) {
        var sql = "SELECT set_config('role', $1, true), set_config('request.jwt.claims', $2, true), set_config('request.client_ip', $3, true)"
        var values: [any PostgresEncodable] = []
        for setting in settings {
            sql += ", set_config($\(values.count + 4), $\(values.count + 5), true)"
            values += [setting.name, setting.value]
        }
        return (sql, values)
    }

    /// Runs `body` between `BEGIN` and `COMMIT` (several round trips); rolls back if it throws.
    public func transaction<R>(_ body: (PostgresConnection) throws -> R) throws -> R {
        try self.execute("BEGIN")
        do {
            let result = try body(self)
            try self.execute("COMMIT")
            return result
        } catch {
            if self.transactionStatus == .inTransaction || self.transactionStatus == .inError {
                _ = try? self.execute("ROLLBACK")
            }
            throw error
        }
    }
}

extension PostgresPool {
    /// Borrows a connection and runs several identities' statements in one transaction and one round trip
    /// (see `PostgresConnection.requestTransactions`).
    public nonisolated func requestTransactions(
        _ steps: [(identity: RequestIdentity, statements: [PostgresStatement])], readOnly: Bool = false,
        prelude: [PostgresStatement] = []
    ) async throws -> [[PostgresResult]] {
        try await self.withConnection { try await $0.requestTransactions(steps, readOnly: readOnly, prelude: prelude) }
    }

    /// Borrows a connection and runs `statements` as one request transaction in one round trip
    /// (see `PostgresConnection.requestTransaction`).
    public nonisolated func requestTransaction(
        _ identity: RequestIdentity, readOnly: Bool = false, _ statements: [PostgresStatement]
    ) async throws -> [PostgresResult] {
        try await self.withConnection { try await $0.requestTransaction(identity, readOnly: readOnly, statements) }
    }
}

extension PooledConnection {
    /// Runs several identities' statements in one transaction and one round trip (see
    /// `PostgresConnection.requestTransactions`), without blocking a thread where the pool has a `PostgresSocketWaiter`.
    public func requestTransactions(
        _ steps: [(identity: RequestIdentity, statements: [PostgresStatement])], readOnly: Bool = false,
        prelude: [PostgresStatement] = []
    ) async throws -> [[PostgresResult]] {
        try await self.waitingOrBlocking {
            try await self.connection.requestTransactions(steps, readOnly: readOnly, prelude: prelude, waiter: $0)
        } blocking: {
            try $0.requestTransactions(steps, readOnly: readOnly, prelude: prelude)
        }
    }

    /// Runs `statements` as one request transaction in one round trip (see `PostgresConnection.requestTransaction`),
    /// without blocking a thread where the pool has a `PostgresSocketWaiter`, else on a pool thread.
    public func requestTransaction(
        _ identity: RequestIdentity, readOnly: Bool = false, _ statements: [PostgresStatement]
    ) async throws -> [PostgresResult] {
        try await self.waitingOrBlocking {
            try await self.connection.requestTransaction(identity, readOnly: readOnly, statements, waiter: $0)
        } blocking: {
            try $0.requestTransaction(identity, readOnly: readOnly, statements)
        }
    }
}
