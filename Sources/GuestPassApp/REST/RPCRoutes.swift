import Foundation
import GuestPassPostgres
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import GuestPassJSON
import GuestPassStore
import PostgRESTGrammar

/// PostgREST-compatible RPC: `POST /rest/v1/rpc/<fn>` with named JSON arguments, `GET` with query-string arguments
/// (read-only). Only functions of the exposed schemas are reachable; the caller's role and verified claims come from
/// the API key and token, never from the request. A function's rows take the table grammar as PostgREST's do
/// (`rpc('fn').select('a').eq('b', 1).order('a').single()`): the query's `select`, filters, `order` and ranges,
/// `Accept` and `Prefer: count` shape them (on GET, a pair whose value parses as a filter is one, any other is an
/// argument). Read-only calls (GET, or a STABLE/IMMUTABLE function) run on `readPool` — a streaming replica when
/// `GUESTPASS_DATABASE_READ_URL` is set, so they may lag the primary by the replication delay, and fall back to the
/// primary when the replica cannot answer — and everything else on `pool`, the primary.
struct RPCRoutes: Sendable {
    let pool: PostgresPool
    let reads: ReadRouting
    let authenticator: Authenticator
    let catalog: SchemaCache
    /// `db-max-rows`, for a function's rows as for a table's.
    let maxRows: Int

    func register(on router: Router<AppRequestContext>) {
        router.group("rest/v1").add(middleware: ErrorMiddleware(dialect: .postgREST))
            .add(middleware: AuthenticationMiddleware(authenticator: self.authenticator))
            .group(context: CallerContext.self)
            .post("rpc/:function") { request, context in try await self.call(request, context, readOnlyRequest: false) }
            .get("rpc/:function") { request, context in try await self.call(request, context, readOnlyRequest: true) }
            .head("rpc/:function") { request, context in try await self.call(request, context, readOnlyRequest: true, head: true) }
    }

    /// One call; `head` (`rpc(…, head: true)`) answers GET's status and headers without a body.
    func call(_ request: Request, _ context: CallerContext, readOnlyRequest: Bool, head: Bool = false) async throws -> Response {
        var request = request
        let caller = context.caller
        let name = context.parameters.get("function") ?? ""
        let schema = try TableRequest.schema(request, schemas: self.catalog.schemas, readOnly: readOnlyRequest)
        let preferences = Preferences.parse(headers: request.headers[values: .prefer])
        try TableRequest.refuseTransactionPreference(preferences)
        // Decoded strictly (a NUL, which PostgreSQL text cannot hold, or invalid UTF-8 is 400 `PGRST100`).
        let pairs = try TableRequest.pairs(request)
        var arguments: [String: JSONValue]
        let shaping: [(key: String, value: String)]
        if readOnlyRequest {
            (arguments, shaping) = Self.argumentsAndShaping(pairs)
        } else {
            arguments = try await request.jsonObject(limit: BodyLimits.rpc)
            shaping = pairs
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
        let shaped = try self.shapedPlan(
            request, function, schema: schema, pairs: shaping, asksForCount: preferences.count != nil, readOnly: readOnlyRequest, head: head)
        let statements = [
            RequestSettings.statement(
                schema: schema, extraSearchPath: self.catalog.extraSearchPath, plan: shaped, role: caller.identity.role.rawValue),
            try shaped.map { try RPCStatement.statement(for: function, arguments: arguments, plan: $0) }
                ?? RPCStatement.statement(for: function, arguments: arguments),
        ]
        let results: [PostgresResult]
        do {
            if readOnlyRequest || function.isReadOnly {
                results = try await self.reads.run(caller.identity, statements)
            } else {
                results = try await self.pool.requestTransaction(caller.identity, statements)
            }
        } catch {
            ServiceMetrics.rpc(
                name, status: Int(APIError.answer(for: error, dialect: .postgREST, anonymous: caller.identity.role == .anon).status.code))
            throw error
        }
        ServiceMetrics.rpc(name, status: function.shape == .void ? 204 : 200)
        if let shaped {
            guard let row = results.last?.first else { throw APIError.unexpected }
            let response = TableResponse(plan: shaped, schema: schema, multipleSchemas: self.catalog.schemas.count > 1)
            return try response.answer(
                total: try row.decode(Int?.self, "total"), pageTotal: try row.decode(Int.self, "page_total"), body: try row.cell("body").bytes,
                inserted: nil)
        }
        // PostgREST names the schema back when the client could choose among several.
        var headers: HTTPFields = self.catalog.schemas.count > 1 ? [.contentProfile: schema] : [:]
        if function.shape == .void { return Response(status: .noContent, headers: headers) }
        // As a read's: the rows answered, the total only when a count was asked for (a scalar's or a row's is 1).
        let rows = try results.last?.first?.decode(Int.self, at: 1) ?? 1
        headers[.contentRange] = TableResponse.contentRange(0, rows - 1, preferences.count != nil ? rows : nil)
        headers[.contentType] = "application/json; charset=utf-8"
        if head { return Response(status: .ok, headers: headers) }
        let body = try results.last?.first?.decode(String?.self, at: 0) ?? "null"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    /// A GET's query pairs split as PostgREST splits them: the table grammar's own keys (`select`, `order`, `limit`,
    /// `or`, …) and every pair whose value parses as a filter (`col=eq.1`) shape the rows; any other pair is an
    /// argument. The publishable key, which may travel in the URL, is neither.
    static func argumentsAndShaping(_ pairs: [(key: String, value: String)]) -> ([String: JSONValue], [(key: String, value: String)]) {
        var arguments: [String: JSONValue] = [:]
        var shaping: [(key: String, value: String)] = []
        for pair in pairs where pair.key != "apikey" {
            let lastWord = pair.key.split(separator: ".").last.map(String.init) ?? pair.key
            let isGrammarKey =
                ["select", "columns", "on_conflict"].contains(pair.key) || ["order", "limit", "offset", "or", "and"].contains(lastWord)
            if isGrammarKey || (try? QueryGrammar.parse([pair])) != nil {
                shaping.append(pair)
            } else {
                arguments[pair.key] = .string(pair.value)
            }
        }
        return (arguments, shaping)
    }

    /// The table grammar's plan over the function's rows, or nil when the request does not shape them (no grammar
    /// pair, plain JSON accepted, no count and no `Range` asked for) or the function answers no rows of known
    /// columns: the call is then answered as it is.
    private func shapedPlan(
        _ request: Request, _ function: RPCFunction, schema: String, pairs: [(key: String, value: String)], asksForCount: Bool,
        readOnly: Bool, head: Bool
    ) throws -> TablePlan? {
        // Checked before any parsing: the common call (consume_quota) shapes nothing.
        let (mediaType, stripNulls) = try TableRequest.mediaType(request.headers[.accept])
        let asksForRange = readOnly && request.headers[.range] != nil
        guard pairs.contains(where: { $0.key != "apikey" }) || mediaType != .array || stripNulls || asksForCount || asksForRange else { return nil }
        let parsed = try TableRequest(request, name: function.name, schema: schema, pairs: pairs, method: readOnly ? .get : .post)
        let catalog = self.catalog.relationCatalog
        guard let relation = function.resultRelation(in: catalog) else { return nil }
        let range = parsed.range
        return TablePlan(
            catalog: catalog, relation: relation, query: parsed.query, preferences: parsed.preferences, action: .read(head: head),
            mediaType: parsed.mediaType, stripNulls: parsed.stripNulls, maxRows: self.maxRows, offset: range.offset, limit: range.limit)
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
