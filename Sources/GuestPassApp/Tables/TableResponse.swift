import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PostgRESTGrammar
import GuestPassJSON
import GuestPassStore

/// The answer to a table request, as PostgREST gives it (`Response.hs`, `RangeQuery.hs`): status, `Content-Range` on
/// every response, `Preference-Applied`, `Location` for `return=headers-only`, `Content-Profile` when several
/// schemas are exposed, and the body PostgreSQL built, passed through untouched.
struct TableResponse {
    let plan: TablePlan
    let schema: String
    let multipleSchemas: Bool
    /// A table read's `Content-Location`: `/<table>[?<canonical query>]` (PostgREST's; none for RPC).
    var contentLocation: String? = nil

    func answer(total: Int?, pageTotal: Int, body: [UInt8]?, inserted: Int?) throws -> Response {
        let countTotal = self.plan.wantsCount ? (total ?? pageTotal) : nil
        switch self.plan.action {
        case .read(let head):
            let lower = self.plan.offset
            // PostgREST's `rangeStatus`: an offset past the counted rows is 416, `Content-Range: */<total>`.
            if let countTotal, lower > countTotal {
                let headers = self.headers(contentRange: Self.contentRange(lower, lower - 1, countTotal))
                throw APIError(
                    .rangeNotSatisfiable, code: PostgRESTCode.invalidRange, message: "Requested range not satisfiable",
                    details: "An offset of \(lower) was requested, but there are only \(countTotal) rows.", headers: headers)
            }
            if self.plan.singular, pageTotal != 1 { throw Self.notSingular(pageTotal) }
            let status: HTTPResponse.Status = countTotal.map { pageTotal < $0 ? .partialContent : .ok } ?? .ok
            var headers = self.headers(contentRange: Self.contentRange(lower, lower + pageTotal - 1, countTotal))
            headers[.contentType] = self.contentType
            return Response(status: status, headers: headers, body: head ? .init() : .init(byteBuffer: ByteBuffer(bytes: body ?? [])))
        case .insert:
            var headers = self.headers(contentRange: Self.contentRange(1, 0, countTotal))
            if self.plan.returnsHeadersOnly, pageTotal == 1, let location = self.location(body) { headers[.location] = location }
            // `inserted` is counted only by a merge upsert with a conflict target: 200 when it inserted nothing.
            let status: HTTPResponse.Status = (inserted.map { $0 <= 0 } ?? false) ? .ok : .created
            return self.withRepresentation(status: status, headers: headers, body: body)
        case .put:
            // PostgREST's single upsert: no Content-Range; with a representation 201 when the row was inserted, 200 when
            // it replaced one; else 204.
            let status: HTTPResponse.Status = !self.plan.returnsRepresentation ? .noContent : (inserted ?? 0) > 0 ? .created : .ok
            return self.withRepresentation(status: status, headers: self.headers(), body: body)
        case .update:
            let headers = self.headers(contentRange: Self.contentRange(0, pageTotal - 1, countTotal))
            return self.withRepresentation(status: .noContent, headers: headers, body: body)
        case .delete:
            let headers = self.headers(contentRange: Self.contentRange(1, 0, countTotal))
            return self.withRepresentation(status: .noContent, headers: headers, body: body)
        }
    }

    /// A PATCH whose body sets nothing: no UPDATE runs; 204, or `[]` with `return=representation`.
    func emptyUpdate() -> Response {
        let headers = self.headers(contentRange: Self.contentRange(0, -1, self.plan.wantsCount ? 0 : nil))
        let none =
            switch self.plan.mediaType {
            case .array: "[]"
            case .object: "null"
            case .csv: "\n"
            }
        return self.withRepresentation(status: .noContent, headers: headers, body: Array(none.utf8))
    }

    /// With `return=representation` the rows and 200 (an insert keeps its 201/200), else no body and `status`.
    private func withRepresentation(status: HTTPResponse.Status, headers: HTTPFields, body: [UInt8]?) -> Response {
        guard self.plan.returnsRepresentation else { return Response(status: status, headers: headers, body: .init()) }
        var headers = headers
        headers[.contentType] = self.contentType
        let shown: HTTPResponse.Status = self.plan.action == .insert || self.plan.action == .put ? status : .ok
        return Response(status: shown, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body ?? Array("[]".utf8))))
    }

    /// The media type answered; with `nulls=stripped` PostgREST echoes the stripping one it served.
    private var contentType: String {
        switch (self.plan.mediaType, self.plan.stripNulls) {
        case (.array, false): "application/json; charset=utf-8"
        case (.array, true): "application/vnd.pgrst.array+json;nulls=stripped; charset=utf-8"
        case (.object, false): "application/vnd.pgrst.object+json; charset=utf-8"
        case (.object, true): "application/vnd.pgrst.object+json;nulls=stripped; charset=utf-8"
        case (.csv, _): "text/csv; charset=utf-8"
        }
    }

    private func headers(contentRange: String? = nil) -> HTTPFields {
        var headers: HTTPFields = [:]
        if let contentRange { headers[.contentRange] = contentRange }
        if let applied = self.preferenceApplied { headers[.preferenceApplied] = applied }
        if self.multipleSchemas { headers[.contentProfile] = self.schema }
        if let location = self.contentLocation { headers[.contentLocation] = location }
        return headers
    }

    /// The preferences honoured, in PostgREST's order: resolution (POST into a relation with a key), missing
    /// (POST, PATCH), return (writes, `PUT` too), count, tx (`commit`, the only one served), handling, timezone,
    /// max-affected (PATCH, DELETE under `handling=strict`).
    var preferenceApplied: String? {
        let preferences = self.plan.preferences
        let action = self.plan.action
        var applied: [String] = []
        if action == .insert, let resolution = preferences.resolution, !self.plan.relation.primaryKey.isEmpty || self.plan.query.onConflict != nil {
            applied.append("resolution=" + resolution.rawValue)
        }
        if action == .insert || action == .update, let missing = preferences.missing { applied.append("missing=" + missing.rawValue) }
        if case .read = action {} else if let value = preferences.returnPreference { applied.append("return=" + value.rawValue) }
        if let count = preferences.count { applied.append("count=" + count.rawValue) }
        if preferences.transaction == .commit { applied.append("tx=commit") }
        if let handling = preferences.handling { applied.append("handling=" + handling.rawValue) }
        if let zone = preferences.timezone { applied.append("timezone=" + zone) }
        if action == .update || action == .delete, preferences.handling == .strict, let most = preferences.maxAffected {
            applied.append("max-affected=\(most)")
        }
        return applied.isEmpty ? nil : applied.joined(separator: ", ")
    }

    /// `Location: /<table>?<pk>=eq.<value>…` (`is.null` for a null key) for the one row a `return=headers-only` insert
    /// wrote, each name and value percent-encoded as PostgREST's `renderSimpleQuery True` writes them (every byte of
    /// UTF-8 but the unreserved ones, a space as `+`), so that a client follows it as it is.
    private func location(_ body: [UInt8]?) -> String? {
        guard let body, case .array(let rows)? = try? JSONParser.parse(body), rows.count == 1, let row = rows[0].objectValue else { return nil }
        let pairs = self.plan.relation.primaryKey.compactMap { key -> String? in
            guard let value = row[key] else { return nil }
            let condition: String
            switch value {
            case .string(let string): condition = "eq." + string
            case .null: condition = "is.null"
            default: condition = "eq." + value.jsonText
            }
            return Self.queryEncoded(key) + "=" + Self.queryEncoded(condition)
        }
        return "/" + self.plan.relation.name + "?" + pairs.joined(separator: "&")
    }

    /// `text` as http-types' `urlEncode True`: unreserved bytes as they are, a space as `+`, every other byte `%XX`.
    static func queryEncoded(_ text: String) -> String { QueryString.percentEncoded(text, spaceAsPlus: true) }

    /// `Content-Range`: `lower-upper/total`, `*` for an empty range, `*` for an unknown total.
    static func contentRange(_ lower: Int, _ upper: Int, _ total: Int?) -> String {
        let range = total != 0 && lower <= upper ? "\(lower)-\(upper)" : "*"
        return range + "/" + (total.map(String.init) ?? "*")
    }

    /// 406 `PGRST116` with the `details` supabase-swift's `maybeSingle()` parses.
    static func notSingular(_ rows: Int) -> APIError {
        APIError(
            .notAcceptable, code: PostgRESTCode.notSingular, message: "Cannot coerce the result to a single JSON object",
            details: "The result contains \(rows) rows")
    }
}
