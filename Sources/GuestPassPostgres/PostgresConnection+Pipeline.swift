import CLibPQ
import Foundation

extension PostgresConnection {
    /// Sends every statement and one Sync in a single write, then reads every result: one network round trip,
    /// blocking the calling thread until the answers are in (see `PostgresConnection`'s threading note).
    /// Statements after a failing one are skipped by the server (`PGRES_PIPELINE_ABORTED`); the first error is thrown.
    public func pipeline(_ statements: [PostgresStatement]) throws -> [PostgresResult] {
        try self.pipeline(statements, keeping: statements.indices)
    }

    /// `pipeline(_:)`, answering the results of the statements at `kept` only (the others' are freed unread; their
    /// errors still count).
    func pipeline(_ statements: [PostgresStatement], keeping kept: Range<Int>) throws -> [PostgresResult] {
        let deadline = ContinuousClock.now + self.ioTimeout
        var reader = try self.sendPipeline(statements, keeping: kept)
        try self.flush(deadline: deadline)
        while true {
            if let results = try self.readPipeline(&reader) { return results }
            try self.waitForSocket(write: false, deadline: deadline)
            guard PQconsumeInput(self.handle.pointer) == 1 else { throw self.fail(.connectionLost, self.handle.errorMessage) }
        }
    }

    /// The same exchange as `pipeline(_:)`, without blocking: the pipeline is sent and its results read on the calling
    /// thread, and the task suspends on `waiter` while PostgreSQL works (or while the socket's send buffer is full).
    func pipeline(
        _ statements: [PostgresStatement], keeping kept: Range<Int>, waiter: PostgresSocketWaiter
    ) async throws -> [PostgresResult] {
        let deadline = ContinuousClock.now + self.ioTimeout
        var reader = try self.sendPipeline(statements, keeping: kept)
        try await self.flush(on: waiter, until: deadline)
        while true {
            if let results = try self.readPipeline(&reader) { return results }
            try await self.wait(on: waiter, writable: false, until: deadline)
        }
    }

    /// `execute(_:)` without blocking, as `pipeline(_:waiter:)`: one statement with bound parameters, its result.
    func execute(_ statement: PostgresStatement, waiter: PostgresSocketWaiter) async throws -> PostgresResult {
        let pointer = self.handle.pointer
        let deadline = ContinuousClock.now + self.ioTimeout
        try self.send(statement)
        try await self.flush(on: waiter, until: deadline)
        var results: [PostgresResult] = []
        var firstError: PostgresError?
        reading: while true {
            while PQisBusy(pointer) == 0 {
                guard let result = PQgetResult(pointer) else { break reading }
                try self.take(result, into: &results, firstError: &firstError)
            }
            try await self.wait(on: waiter, writable: false, until: deadline)
        }
        if let firstError { throw firstError }
        return try self.lastResult(results)
    }

    /// Flushes libpq's output buffer, waiting while the socket's send buffer is full (and taking in what arrives
    /// meanwhile, so the server never blocks on a full socket either).
    private func flush(on waiter: PostgresSocketWaiter, until deadline: ContinuousClock.Instant) async throws {
        while true {
            let status = PQflush(self.handle.pointer)
            if status == 0 { return }
            if status < 0 { throw self.fail(.connectionLost, self.handle.errorMessage) }
            try await self.wait(on: waiter, writable: true, until: deadline)
        }
    }

    /// Waits for the socket, then takes in what arrived (a wake-up may find nothing new: the caller reads again and
    /// comes back here while libpq is still busy).
    private func wait(on waiter: PostgresSocketWaiter, writable: Bool, until deadline: ContinuousClock.Instant) async throws {
        let socket = PQsocket(self.handle.pointer)
        guard socket >= 0 else { throw self.fail(.connectionLost, "connection has no socket") }
        do {
            try await waiter.wait(socket: socket, writable: writable, until: deadline)
        } catch is PostgresSocketWaiter.Timeout {
            throw self.fail(.timeout, "no answer from the server within \(self.ioTimeout)")
        } catch is PostgresSocketWaiter.Stopped {
            throw self.fail(.poolClosed, "the connection pool is shut down")
        }
        guard PQconsumeInput(self.handle.pointer) == 1 else { throw self.fail(.connectionLost, self.handle.errorMessage) }
    }

    /// What a pipeline's answers are read against: one slot per command queued (a statement, or the prepare of a
    /// statement that reuses its plan), and what was read so far.
    struct PipelineReader {
        enum Slot {
            /// A statement; `kept`: whether its result is answered.
            case statement(kept: Bool)
            case prepare(sql: String, name: String)
        }

        var slots: [Slot] = []
        /// The slot whose results come next (each slot's results end with a NULL from `PQgetResult`).
        var next = 0
        var results: [PostgresResult] = []
        var firstError: PostgresError?
    }

    /// Enters pipeline mode and queues every statement (preparing those that reuse their plan, up to the session's
    /// limit, or half of it for `reusesPlanWhileRoom`) and a Sync; nothing is flushed yet.
    private func sendPipeline(_ statements: [PostgresStatement], keeping kept: Range<Int>) throws -> PipelineReader {
        let pointer = self.handle.pointer
        guard PQenterPipelineMode(pointer) == 1 else { throw self.fail(.protocolViolation, "could not enter pipeline mode") }
        var reader = PipelineReader()
        var preparingNow: [String: String] = [:]
        for (index, statement) in statements.enumerated() {
            let sent = withParameters(statement.parameters) { count, types, values, lengths, formats -> Int32 in
                guard statement.reusesPlan || statement.reusesPlanWhileRoom else {
                    return PQsendQueryParams(pointer, statement.sql, count, types, values, lengths, formats, 0)
                }
                let limit = statement.reusesPlan ? self.preparedStatementLimit : self.preparedStatementLimit / 2
                var name = self.preparedStatements[statement.sql] ?? preparingNow[statement.sql]
                if name == nil, self.preparedStatements.count + preparingNow.count < limit {
                    let newName = "gp_\(self.preparedStatements.count + preparingNow.count)"
                    guard PQsendPrepare(pointer, newName, statement.sql, count, types) == 1 else { return 0 }
                    reader.slots.append(.prepare(sql: statement.sql, name: newName))
                    preparingNow[statement.sql] = newName
                    name = newName
                }
                guard let name else { return PQsendQueryParams(pointer, statement.sql, count, types, values, lengths, formats, 0) }
                return PQsendQueryPrepared(pointer, name, count, values, lengths, formats, 0)
            }
            guard sent == 1 else { throw self.fail(.protocolViolation, "could not queue statement in pipeline") }
            reader.slots.append(.statement(kept: kept.contains(index)))
        }
        guard PQpipelineSync(pointer) == 1 else { throw self.fail(.protocolViolation, "could not send pipeline sync") }
        return reader
    }

    /// Takes every result already received, without waiting: the statements' results once the Sync's answer is in
    /// (or the first error), nil while libpq needs more input.
    private func readPipeline(_ reader: inout PipelineReader) throws -> [PostgresResult]? {
        let pointer = self.handle.pointer
        while reader.next < reader.slots.count {
            guard PQisBusy(pointer) == 0 else { return nil }
            guard let result = PQgetResult(pointer) else {
                reader.next += 1
                continue
            }
            let status = PQresultStatus(result)
            switch reader.slots[reader.next] {
            case .prepare(let sql, let name):
                if status == PGRES_COMMAND_OK { self.preparedStatements[sql] = name }
                if status == PGRES_FATAL_ERROR { reader.firstError = reader.firstError ?? Self.serverError(result) }
                PQclear(result)
            case .statement(let kept):
                switch status {
                case PGRES_PIPELINE_ABORTED:
                    PQclear(result)
                case PGRES_FATAL_ERROR:
                    reader.firstError = reader.firstError ?? Self.serverError(result)
                    PQclear(result)
                default:
                    if kept { reader.results.append(PostgresResult(taking: result)) } else { PQclear(result) }
                }
            }
        }
        guard PQisBusy(pointer) == 0 else { return nil }
        guard let sync = PQgetResult(pointer) else {
            let failure = self.fail(.protocolViolation, "pipeline ended without its sync")
            // The server's own reason, when it ended the session (57P01 admin_shutdown and the like), says more.
            if failure.kind == .protocolViolation, let firstError = reader.firstError, firstError.sqlState?.isUnavailability == true {
                throw firstError
            }
            throw failure
        }
        let syncStatus = PQresultStatus(sync)
        if syncStatus == PGRES_FATAL_ERROR {
            // The server ended the session where the Sync's answer was due (a shutdown after the last statement): the
            // session is gone, and whether a COMMIT before it took effect is the server's to know.
            let ended = Self.serverError(sync)
            PQclear(sync)
            self.isBroken = true
            throw ended.sqlState?.isUnavailability == true ? ended : PostgresError(.connectionLost, message: ended.message)
        }
        PQclear(sync)
        guard syncStatus == PGRES_PIPELINE_SYNC else { throw self.fail(.protocolViolation, "pipeline out of step") }
        guard PQexitPipelineMode(pointer) == 1 else { throw self.fail(.protocolViolation, "could not leave pipeline mode") }
        if let firstError = reader.firstError { throw firstError }
        return reader.results
    }
}
