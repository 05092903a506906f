import Foundation
import GuestPassPostgres
import HTTPTypes
import Hummingbird
import NIOCore
import PostgRESTGrammar
import GuestPassStore

/// PostgREST's table API: `GET`/`HEAD`/`POST`/`PUT`/`PATCH`/`DELETE /rest/v1/<table or view>` for the relations of the
/// exposed schemas, as the Supabase SDKs' `from(…)` calls send them. Each request is one statement in the request
/// transaction (the caller's role and verified claims, one round trip), so row-level security decides every row:
/// reads run through `reads` (a replica when configured), writes on `pool`. `TableRequest` checks the URL and headers,
/// `TableStatements` builds the SQL, `TableResponse` shapes the answer.
struct TableRoutes: Sendable {
    let pool: PostgresPool
    let reads: ReadRouting
    let authenticator: Authenticator
    let catalog: SchemaCache
    /// `db-max-rows`: the most rows any read returns (`GUESTPASS_DB_MAX_ROWS`, Supabase's 1000 by default).
    let maxRows: Int

    /// The largest write body: 1,000 rows of the example table fit many times over.
    static let bodyLimit = BodyLimits.tableWrite

    func register(on router: Router<AppRequestContext>) {
        let group = router.group("rest/v1").add(middleware: ErrorMiddleware(dialect: .postgREST))
            .add(middleware: AuthenticationMiddleware(authenticator: self.authenticator))
            .group(context: CallerContext.self)
        for method in [HTTPRequest.Method.get, .head, .post, .put, .patch, .delete] {
            group.on(":table", method: method) { request, context in try await self.serve(request, context, method: method) }
        }
        // A deeper path (`/rest/v1/a/b`, `/rest/v1/rpc/f/x`) names no resource: PostgREST's 404, with or without a key,
        // as an unknown path is.
        let deeper = router.group("rest/v1").add(middleware: ErrorMiddleware(dialect: .postgREST))
        for method in [HTTPRequest.Method.get, .head, .post, .patch, .delete, .put, .options] {
            deeper.on(":table/**", method: method) { _, _ -> Response in
                throw APIError(.notFound, code: PostgRESTCode.invalidPath, message: "Invalid path specified in request URL")
            }
        }
        for method in [HTTPRequest.Method.trace, .connect, .options] {
            group.on(":table", method: method) { request, _ -> Response in
                throw APIError(
                    .methodNotAllowed, code: PostgRESTCode.unsupportedMethod, message: "Unsupported HTTP method: \(request.method.rawValue)",
                    headers: [.allow: "GET, HEAD, POST, PUT, PATCH, DELETE"])
            }
        }
    }

    func serve(_ request: Request, _ context: CallerContext, method: HTTPRequest.Method) async throws -> Response {
        var request = request
        let parsed = try TableRequest(request, schemas: self.catalog.schemas, method: method)
        let catalog = try await self.catalog.relations(schema: parsed.schema, name: parsed.name)
        guard let relation = catalog.relation(schema: parsed.schema, name: parsed.name) else {
            throw Self.tableNotFound(parsed.schema, parsed.name, catalog)
        }
        let range = parsed.range
        let action: TablePlan.Action =
            switch method {
            case .post: .insert
            case .put: .put
            case .patch: .update
            case .delete: .delete
            default: .read(head: method == .head)
            }
        let plan = TablePlan(
            catalog: catalog, relation: relation, query: parsed.query, preferences: parsed.preferences, action: action,
            mediaType: parsed.mediaType, stripNulls: parsed.stripNulls, maxRows: self.maxRows, offset: range.offset, limit: range.limit
        )
        let response = TableResponse(
            plan: plan, schema: parsed.schema, multipleSchemas: self.catalog.schemas.count > 1,
            contentLocation: method == .get || method == .head ? parsed.contentLocation : nil)
        let statement: PostgresStatement
        switch action {
        case .read:
            statement = try TableStatements.read(plan)
        case .insert:
            let body = try await TableBodyReader.read(&request, relation: relation, columns: parsed.query.columns, limit: Self.bodyLimit)
            statement = try TableStatements.insert(plan, body: body)
        case .put:
            let body = try await TableBodyReader.read(&request, relation: relation, columns: parsed.query.columns, limit: Self.bodyLimit)
            statement = try TableStatements.put(plan, body: body)
        case .update:
            let body = try await TableBodyReader.read(&request, relation: relation, columns: parsed.query.columns, limit: Self.bodyLimit)
            // PostgREST runs no UPDATE for an empty body (`{}`, `[]`), filtered or not.
            if body.columns.isEmpty || body.rowCount == 0 { return response.emptyUpdate() }
            try Self.requireFilter(plan, verb: "UPDATE")
            statement = try TableStatements.update(plan, body: body)
        case .delete:
            try Self.requireFilter(plan, verb: "DELETE")
            statement = try TableStatements.delete(plan)
        }
        let identity = context.caller.identity
        let statements = [
            RequestSettings.statement(schema: parsed.schema, extraSearchPath: self.catalog.extraSearchPath, plan: plan, role: identity.role.rawValue),
            statement,
        ]
        let results: [PostgresResult]
        if case .read = action {
            results = try await self.reads.run(identity, statements)
        } else {
            results = try await self.pool.requestTransaction(identity, statements)
        }
        guard let row = results.last?.first else { throw APIError.unexpected }
        return try response.answer(
            total: try row.decode(Int?.self, "total"), pageTotal: try row.decode(Int.self, "page_total"), body: try row.cell("body").bytes,
            inserted: try row.decode(Int?.self, "inserted"))
    }

    /// An unfiltered PATCH or DELETE would change every row the policies allow: refused as hosted Supabase does
    /// (its `safeupdate` extension), with its SQLSTATE and message.
    private static func requireFilter(_ plan: TablePlan, verb: String) throws {
        guard plan.query.root.filters.isEmpty, plan.query.root.logic.isEmpty else { return }
        throw APIError(
            .badRequest, code: SQLState.cardinalityViolation.rawValue, message: "\(verb) requires a WHERE clause",
            hint: "Add a filter (for example ?id=eq.<id>); to change every row, filter on a column that is never null")
    }

    /// 404 `PGRST205`, with the closest name as PostgREST's hint when it is as similar as PostgREST asks of its fuzzy
    /// match (at least 0.75: one minus the edit distance over the longer name's length, case ignored).
    private static func tableNotFound(_ schema: String, _ name: String, _ catalog: RelationCatalog) -> APIError {
        // Sorted: of equally alike names the first, so the hint is always the same.
        let names = catalog.relations.values.filter { $0.schema == schema }.map(\.name).sorted()
        let closest = names.max { nameSimilarity($0, name) < nameSimilarity($1, name) }
        let hint = closest.flatMap { nameSimilarity($0, name) >= 0.75 ? "Perhaps you meant the table '\(schema).\($0)'" : nil }
        return APIError(
            .notFound, code: PostgRESTCode.tableNotFound, message: "Could not find the table '\(schema).\(name)' in the schema cache", hint: hint)
    }
}
