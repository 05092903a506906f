import Foundation
import GuestPassPostgres
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// PostgREST-compatible RPC: `POST /rest/v1/rpc/<fn>` with named JSON arguments, `GET` with query-string arguments
/// (read-only). Only functions of the exposed schemas are reachable; the caller's role and verified claims come
/// from the API key and token, never from the request. Read-only calls (GET, or a STABLE/IMMUTABLE function) run on
/// `readPool` — a streaming replica when `GUESTPASS_DATABASE_READ_URL` is set, so they may lag the primary by the
/// replication delay, and fall back to the primary when the replica cannot answer — and everything else on `pool`, the
/// primary.
struct RPCRoutes: Sendable {
    let pool: PostgresPool
    let readPool: PostgresPool
    let replicaBackoff = ReplicaBackoff()
    let authenticator: Authenticator
    let catalog: SchemaCache

    /// The largest RPC body (named arguments as one JSON object), as PostgREST's default.
    static let bodyLimit = 1024 * 1024

    func register(on router: Router<AppRequestContext>) {
        router.group("rest/v1").add(middleware: ErrorMiddleware(dialect: .postgREST))
            .add(middleware: AuthenticationMiddleware(authenticator: self.authenticator))
            .group(context: CallerContext.self)
            .post("rpc/:function") { request, context in try await self.call(request, context, readOnlyRequest: false) }
            .get("rpc/:function") { request, context in try await self.call(request, context, readOnlyRequest: true) }
    }

    func call(_ request: Request, _ context: CallerContext, readOnlyRequest: Bool) async throws -> Response {
        var request = request
        let caller = context.caller
        let name = context.parameters.get("function") ?? ""
        let schema = try self.schema(for: request, readOnlyRequest: readOnlyRequest)
        var arguments: [String: JSONValue]
        if readOnlyRequest {
            var fromQuery: [String: JSONValue] = [:]
            for (encodedKey, value) in request.uri.queryParameters {
                let key = String(encodedKey).removingPercentEncoding ?? String(encodedKey)
                // The publishable key may travel in the URL; it is never a function argument.
                if key == "apikey" { continue }
                // PostgreSQL text cannot hold NUL.
                guard !key.utf8.contains(0), !value.utf8.contains(0) else {
                    throw APIError(.badRequest, code: "PGRST100", message: "Query parameters must not contain NUL")
                }
                fromQuery[key] = .string(String(value))
            }
            arguments = fromQuery
        } else {
            arguments = try await request.jsonObject(limit: Self.bodyLimit)
        }
        // `Idempotency-Key` fills a function's `p_request_id` argument, so a retried call returns the first answer.
        var idempotencyKey: String?
        if let header = request.headers[.idempotencyKey] {
            // Visible ASCII only: bytes the HTTP layer could not decode would all collapse into one key.
            guard (1...200).contains(header.utf8.count), header.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw APIError(.badRequest, code: "PGRST100", message: "Idempotency-Key must be 1 to 200 visible ASCII characters")
            }
            idempotencyKey = header
        }
        let explicitRequestID = arguments["p_request_id"] != nil

        var function = try self.match(try await self.catalog.overloads(schema: schema, name: name), arguments)
        if function == nil {
            function = try self.match(try await self.catalog.overloads(schema: schema, name: name, mustReload: true), arguments)
        }
        if let idempotencyKey, !explicitRequestID, function?.arguments.contains(where: { $0.name == "p_request_id" }) == true {
            arguments["p_request_id"] = .string(idempotencyKey)
        }
        guard let function else {
            // At most ten names: the message must not grow with the body.
            let sorted = arguments.keys.sorted()
            let names = sorted.prefix(10).joined(separator: ", ") + (sorted.count > 10 ? ", …" : "")
            throw APIError(
                .notFound, code: "PGRST202",
                message: "Could not find the function \(schema).\(name)(\(names)) in the schema cache",
                hint: "Only functions of the exposed schemas can be called, with named arguments matching exactly one signature"
            )
        }
        let statement = try RPCStatement.statement(for: function, arguments: arguments)
        let results: [PostgresResult]
        do {
            if readOnlyRequest || function.isReadOnly {
                results = try await self.read(caller.identity, statement)
            } else {
                results = try await self.pool.requestTransaction(caller.identity, [statement])
            }
        } catch {
            ServiceMetrics.rpc(
                name, status: Int(APIError.answer(for: error, dialect: .postgREST, anonymous: caller.identity.role == .anon).status.code))
            throw error
        }
        ServiceMetrics.rpc(name, status: function.shape == .void ? 204 : 200)
        if function.shape == .void { return Response(status: .noContent) }
        let body = try results.first?.first?.decode(String?.self, at: 0) ?? "null"
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: body))
        )
    }

    /// Runs a read-only call on the read replica, or on the primary when the replica cannot answer — down,
    /// unreachable, out of connections, or a recovery conflict cancelled the query: a read may run twice, and the
    /// primary holds everything the replica does. Errors of the call itself (a bad argument, a refused caller) are
    /// the answer, from wherever they came.
    /// After a failure the replica is left alone for `ReplicaBackoff.pause`, so a replica that hangs instead of refusing
    /// costs one slow call, not one per read.
    private func read(_ identity: RequestIdentity, _ statement: PostgresStatement) async throws -> [PostgresResult] {
        guard self.readPool !== self.pool, self.replicaBackoff.mayTry() else {
            return try await self.pool.requestTransaction(identity, readOnly: true, [statement])
        }
        do {
            return try await self.readPool.requestTransaction(identity, readOnly: true, [statement])
        } catch let error as PostgresError
            where error.isConnectionError || error.kind == .acquireTimeout || error.sqlState?.isUnavailability == true
            || error.sqlState == .serializationFailure
        {
            ServiceMetrics.readReplicaFallback()
            if error.kind != .acquireTimeout, error.sqlState != .serializationFailure { self.replicaBackoff.failed() }
            return try await self.pool.requestTransaction(identity, readOnly: true, [statement])
        }
    }

    /// The schema the request targets: the first exposed schema, or the one named by `Content-Profile` (POST) /
    /// `Accept-Profile` (GET), which must be exposed.
    private func schema(for request: Request, readOnlyRequest: Bool) throws -> String {
        let header = HTTPField.Name(readOnlyRequest ? "Accept-Profile" : "Content-Profile")!
        guard let requested = request.headers[header] else { return self.catalog.schemas[0] }
        guard self.catalog.schemas.contains(requested) else {
            throw APIError(
                .notAcceptable, code: "PGRST106", message: "The schema must be one of the following: \(self.catalog.schemas.joined(separator: ", "))"
            )
        }
        return requested
    }

    /// The one overload whose argument names fit `arguments` (all required ones given, none unknown), or nil.
    private func match(_ overloads: [RPCFunction], _ arguments: [String: JSONValue]) throws -> RPCFunction? {
        let fitting = overloads.filter { function in
            if function.takesWholeBody { return true }
            let names = Set(function.arguments.map(\.name))
            guard Set(arguments.keys).isSubset(of: names) else { return false }
            return function.arguments.allSatisfy { $0.hasDefault || arguments[$0.name] != nil }
        }
        return fitting.count == 1 ? fitting[0] : nil
    }
}

/// When the read replica last failed to answer: reads skip it for `pause` after that, then try it again.
final class ReplicaBackoff: Sendable {
    static let pause: Duration = .seconds(5)
    private let failedAt = NIOLockedValueBox<ContinuousClock.Instant?>(nil)

    func mayTry() -> Bool {
        self.failedAt.withLockedValue { $0.map { ContinuousClock.now - $0 >= Self.pause } ?? true }
    }

    func failed() { self.failedAt.withLockedValue { $0 = ContinuousClock.now } }
}
