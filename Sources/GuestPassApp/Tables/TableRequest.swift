import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PostgRESTGrammar
import GuestPassStore

/// The parts of a table request that come from its URL and headers, checked before any SQL runs: the URL's length
/// and text, the relation's name, the schema, the query string, the preferences and the media type.
struct TableRequest {
    /// The longest URL served (PostgREST's proxies answer 414 past about this; `.in()` lists are the usual cause).
    static let urlLimit = 16 * 1024

    let name: String
    let schema: String
    let query: TableQuery
    let preferences: Preferences
    let mediaType: TableMediaType
    let stripNulls: Bool
    /// The query's decoded pairs, for a read's `Content-Location` (`contentLocation`).
    let pairs: [(key: String, value: String)]
    /// `Range: 0-9` (GET only), intersected with `limit`/`offset` by `range`.
    let rangeHeader: (offset: Int, limit: Int?)?

    init(_ request: Request, schemas: [String], method: HTTPRequest.Method) throws {
        let target = request.head.path ?? "/"
        guard target.utf8.count <= Self.urlLimit else {
            throw APIError(.uriTooLong, code: PostgRESTCode.queryParse, message: "The request URL is longer than \(Self.urlLimit) bytes")
        }
        let rawPath = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let lastSegment = rawPath.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        guard let name = lastSegment.removingPercentEncoding, !name.isEmpty, !name.utf8.contains(0) else {
            throw APIError(.badRequest, code: PostgRESTCode.queryParse, message: "The table name in the path is not valid UTF-8 text")
        }
        let schema = try Self.schema(request, schemas: schemas, readOnly: method == .get || method == .head)
        try self.init(request, name: name, schema: schema, pairs: Self.pairs(request), method: method)
    }

    /// A request on the rows `name` answers in `schema` (a function's, for RPC), shaped by `pairs`, the query's pairs
    /// that are not a function's arguments.
    init(_ request: Request, name: String, schema: String, pairs: [(key: String, value: String)], method: HTTPRequest.Method) throws {
        self.name = name
        self.schema = schema
        self.pairs = pairs
        do {
            self.query = try QueryGrammar.parse(pairs)
        } catch {
            throw Self.apiError(error)
        }
        if let place = self.query.firstEmptyName {
            throw APIError(.badRequest, code: PostgRESTCode.queryParse, message: "An empty name in \(place)", details: "Names must not be empty")
        }
        self.preferences = Preferences.parse(headers: request.headers[values: .prefer])
        try Self.refuseTransactionPreference(self.preferences)
        if self.preferences.handling == .strict, !self.preferences.invalid.isEmpty {
            throw APIError(
                .badRequest, code: PostgRESTCode.invalidPreferences, message: "Invalid preferences given with handling=strict",
                details: "Invalid preferences: " + self.preferences.invalid.joined(separator: ", "))
        }
        (self.mediaType, self.stripNulls) = try Self.mediaType(request.headers[.accept])
        self.rangeHeader = method == .get ? request.headers[.range].flatMap(QueryGrammar.range(header:)) : nil
        if let limit = self.rangeHeader?.limit, limit < 1 {
            throw APIError(
                .rangeNotSatisfiable, code: PostgRESTCode.invalidRange, message: "Requested range not satisfiable",
                details: "The lower boundary must be lower than or equal to the upper boundary in the Range header.")
        }
    }

    /// `Prefer: tx=rollback` is 400 `PGRST122`, on tables and functions alike: every request commits, since a
    /// rolled-back one would also undo attempt counters. `tx=commit` asks for what happens anyway: applied and echoed,
    /// as PostgREST does where the override is allowed (where it is not, PostgREST ignores both, so a client asking to
    /// roll back would find its write committed).
    static func refuseTransactionPreference(_ preferences: Preferences) throws {
        guard preferences.transaction == .rollback else { return }
        throw APIError(
            .badRequest, code: PostgRESTCode.invalidPreferences, message: "Prefer: tx=rollback is not allowed",
            details: "Every request commits: rolling back would undo attempt counters", hint: "Remove the tx preference")
    }

    /// The request's decoded query pairs (400 `PGRST100` for a malformed escape, invalid UTF-8 or NUL).
    static func pairs(_ request: Request) throws -> [(key: String, value: String)] {
        do {
            return try QueryGrammar.pairs(rawQuery: request.uri.query ?? "")
        } catch {
            throw Self.apiError(error)
        }
    }

    /// A grammar error as PostgREST answers it: 416 for a range, else 400.
    private static func apiError(_ error: QueryGrammarError) -> APIError {
        APIError(
            error.code == PostgRESTCode.invalidRange ? .rangeNotSatisfiable : .badRequest, code: error.code, message: error.message,
            details: error.details, hint: error.hint)
    }

    /// PostgREST's `Content-Location` of a read: `/<name>`, then `?` and the canonical query string when there is one
    /// (the `apikey` pair, which is no part of the query PostgREST sees behind Supabase's gateway, left out).
    var contentLocation: String {
        let canonical = QueryGrammar.canonical(self.pairs.filter { $0.key != "apikey" })
        return "/" + self.name + (canonical.isEmpty ? "" : "?" + canonical)
    }

    /// The root range: `limit`/`offset` intersected with the `Range` header (PostgREST's `restrictRange`).
    var range: (offset: Int, limit: Int?) {
        var offset = self.query.root.offset ?? 0
        var limit = self.query.root.limit
        if let header = self.rangeHeader {
            let upper = header.limit.map { header.offset + $0 - 1 }
            let queryUpper = limit.map { offset + $0 - 1 }
            offset = max(offset, header.offset)
            let bounds = [upper, queryUpper].compactMap { $0 }
            limit = bounds.min().map { max(0, $0 - offset + 1) }
        }
        return (offset, limit)
    }

    /// The schema the request targets: the first exposed one, or the one `Accept-Profile` (GET, HEAD) or
    /// `Content-Profile` (others) names, which must be exposed (else 406 `PGRST106`).
    static func schema(_ request: Request, schemas: [String], readOnly: Bool) throws -> String {
        guard let requested = request.headers[readOnly ? .acceptProfile : .contentProfile] else { return schemas[0] }
        guard schemas.contains(requested) else {
            throw APIError(
                .notAcceptable, code: PostgRESTCode.unacceptableSchema, message: "Invalid schema: \(requested)",
                hint: "Only the following schemas are exposed: \(schemas.joined(separator: ", "))")
        }
        return requested
    }

    /// The media type answered: an array (absent, `*/*`, `application/json`), one object
    /// (`application/vnd.pgrst.object+json`), or CSV (`text/csv`); `;nulls=stripped` strips null members of JSON.
    /// Anything else is 406 `PGRST107`.
    static func mediaType(_ accept: String?) throws -> (TableMediaType, stripNulls: Bool) {
        guard let accept, !accept.isEmpty else { return (.array, false) }
        for entry in accept.split(separator: ",") {
            let parts = entry.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            let stripNulls = parts.dropFirst().contains("nulls=stripped")
            switch parts.first ?? "" {
            case "*/*", "application/*", "application/json", "application/vnd.pgrst.array+json", "application/vnd.pgrst.array":
                return (.array, stripNulls)
            case "application/vnd.pgrst.object+json", "application/vnd.pgrst.object": return (.object, stripNulls)
            case "text/csv": return (.csv, false)
            default: continue
            }
        }
        throw APIError(.notAcceptable, code: PostgRESTCode.unacceptableMediaType, message: "None of these media types are available: \(accept)")
    }
}

extension HTTPField.Name {
    static let prefer = Self("Prefer")!
    static let preferenceApplied = Self("Preference-Applied")!
    static let acceptProfile = Self("Accept-Profile")!
    static let contentProfile = Self("Content-Profile")!
    static let contentRange = Self("Content-Range")!
}

extension TableQuery {
    /// The first empty name in the request (a column, alias, embedding or hint): PostgreSQL has no zero-length
    /// identifier, so it is refused here, as a parse error, before any SQL is built.
    var firstEmptyName: String? {
        func fieldEmpty(_ field: FieldPath) -> Bool { field.column.isEmpty }
        func itemsEmpty(_ items: [SelectItem]) -> Bool {
            items.contains { item in
                switch item {
                case .star: return false
                case .field(let field): return fieldEmpty(field.field) || field.alias?.isEmpty == true
                case .embed(let embedding):
                    return embedding.relation.isEmpty || embedding.alias?.isEmpty == true || embedding.hint?.isEmpty == true
                        || itemsEmpty(embedding.items)
                }
            }
        }
        func treeEmpty(_ group: LogicGroup) -> Bool {
            group.children.contains { child in
                switch child {
                case .filter(let filter): return fieldEmpty(filter.field)
                case .group(let inner): return treeEmpty(inner)
                }
            }
        }
        func modifiersEmpty(_ modifiers: NodeModifiers) -> Bool {
            modifiers.filters.contains { fieldEmpty($0.field) } || modifiers.logic.contains(where: treeEmpty)
                || modifiers.order.contains { fieldEmpty($0.field) }
        }
        if itemsEmpty(self.select) { return "select" }
        if modifiersEmpty(self.root) || self.embedded.values.contains(where: modifiersEmpty) { return "a filter or order" }
        if self.columns?.contains("") == true { return "columns" }
        if self.onConflict?.contains("") == true { return "on_conflict" }
        return nil
    }
}
