import Foundation
import GuestPassPostgres
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import GuestPassJSON
import GuestPassStore

/// PostgREST-compatible RPC: `POST /rest/v1/rpc/<fn>` with named JSON arguments, `GET` with query-string arguments
/// (read-only). Only functions of the exposed schemas are reachable; the caller's role and verified claims come
/// from the API key and token, never from the request. Read-only calls (GET, or a STABLE/IMMUTABLE function) run on
/// `readPool` — a streaming replica when `GUESTPASS_DATABASE_READ_URL` is set, so they may lag the primary by the
/// replication delay, and fall back to the primary when the replica cannot answer — and everything else on `pool`, the
/// primary.
struct RPCRoutes: Sendable {
    let pool: PostgresPool
    let reads: ReadRouting
    let authenticator: Authenticator
    let catalog: SchemaCache

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
        let schema = try TableRequest.schema(request, schemas: self.catalog.schemas, readOnly: readOnlyRequest)
        var arguments: [String: JSONValue]
        if readOnlyRequest {
            var fromQuery: [String: JSONValue] = [:]
            for (encodedKey, value) in request.uri.queryParameters {
                let key = String(encodedKey).removingPercentEncoding ?? String(encodedKey)
                // The publishable key may travel in the URL; it is never a function argument.
                if key == "apikey" { continue }
                // PostgreSQL text cannot hold NUL.
                guard !key.utf8.contains(0), !value.utf8.contains(0) else {
                    throw APIError(.badRequest, code: PostgRESTCode.queryParse, message: "Query parameters must not contain NUL")
                }
                fromQuery[key] = .string(String(value))
            }
            arguments = fromQuery
        } else {
            arguments = try await request.jsonObject(limit: BodyLimits.rpc)
        }
        // `Idempotency-Key` fills a function's `p_request_id` argument, so a retried call returns the first answer.
        var idempotencyKey: String?
        if let header = request.headers[.idempotencyKey] {
            // Visible ASCII only: bytes the HTTP layer could not decode would all collapse into one key.
            guard (1...200).contains(header.utf8.count), header.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw APIError(.badRequest, code: PostgRESTCode.queryParse, message: "Idempotency-Key must be 1 to 200 visible ASCII characters")
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
                .notFound, code: PostgRESTCode.functionNotFound,
                message: "Could not find the function \(schema).\(name)(\(names)) in the schema cache",
                hint: "Only functions of the exposed schemas can be called, with named arguments matching exactly one signature"
            )
        }
        let statement = try RPCStatement.statement(for: function, arguments: arguments)
        let results: [PostgresResult]
        do {
            if readOnlyRequest || function.isReadOnly {
                results = try await self.reads.run(caller.identity, [statement])
            } else {
                results = try await self.pool.requestTransaction(caller.identity, [statement])
            }
        } catch {
            ServiceMetrics.rpc(
                name, status: Int(APIError.answer(for: error, dialect: .postgREST, anonymous: caller.identity.role == .anon).status.code))
            throw error
        }
        ServiceMetrics.rpc(name, status: function.shape == .void ? 204 : 200)
        // PostgREST names the schema back when the client could choose among several.
        var headers: HTTPFields = self.catalog.schemas.count > 1 ? [.contentProfile: schema] : [:]
        if function.shape == .void { return Response(status: .noContent, headers: headers) }
        let body = try results.first?.first?.decode(String?.self, at: 0) ?? "null"
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
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
