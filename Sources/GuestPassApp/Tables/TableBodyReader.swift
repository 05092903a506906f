import Hummingbird
import NIOCore
import Foundation
import GuestPassJSON
import GuestPassStore
import PostgRESTGrammar

/// Reads the JSON body of a table write: an object or an array of objects, checked strictly (`JSONParser`: no NUL,
/// no invalid UTF-8, bounded depth and size) and then passed to PostgreSQL as the client's own text, so numbers keep
/// every digit. The columns written are `columns=` when given (the body's other keys ignored, missing ones NULL or,
/// with `missing=default`, their default), else the keys of the objects, which must all have the same keys (PostgREST's
/// "All object keys must match", also for an array holding something other than objects). A form body
/// (`application/x-www-form-urlencoded`) is one row, every value text, as PostgREST reads it; a CSV body (`text/csv`,
/// `CSVBody`) is a header line of column names and a row a line, every value text or `NULL`.
enum TableBodyReader {
    static func read(_ request: inout Request, relation: Relation, columns: [String]?, limit: Int) async throws -> TableBody {
        var isForm = false
        var isCSV = false
        if let type = request.headers[.contentType], !type.isEmpty {
            let mediaType = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            isForm = mediaType == "application/x-www-form-urlencoded"
            isCSV = mediaType == "text/csv"
            guard mediaType == "application/json" || mediaType == "*/*" || isForm || isCSV else {
                throw APIError(.badRequest, code: PostgRESTCode.invalidBody, message: "Content-Type not acceptable: \(type)")
            }
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch {
            throw APIError(.contentTooLarge, code: PostgRESTCode.invalidBody, message: "The request body is larger than \(limit) bytes")
        }
        let value: JSONValue
        do {
            value = isForm ? try Self.form(buffer) : isCSV ? try Self.csv(buffer) : try JSONParser.parse(buffer.readableBytesView)
        } catch is JSONParser.Failure {
            // PostgREST's words exactly (no details): aeson's position would not be ours anyway.
            throw APIError(.badRequest, code: PostgRESTCode.invalidBody, message: "Empty or invalid json")
        }
        let rows: [[String: JSONValue]]
        switch value {
        case .object(let object): rows = [object]
        case .array(let elements):
            rows = try elements.map { element in
                guard let object = element.objectValue else { throw Self.keysDiffer }
                return object
            }
        default:
            throw APIError(.badRequest, code: PostgRESTCode.invalidBody, message: "The body must be a JSON object or an array of objects")
        }
        let names: [String]
        if let columns {
            names = columns
        } else {
            let keys = Set(rows.first?.keys ?? [:].keys)
            guard rows.allSatisfy({ Set($0.keys) == keys }) else { throw Self.keysDiffer }
            names = keys.sorted()
        }
        let resolved = try names.map { name in
            guard let column = relation.column(name) else {
                throw APIError(
                    .badRequest, code: PostgRESTCode.columnNotFound,
                    message: "Could not find the '\(name)' column of '\(relation.name)' in the schema cache")
            }
            return column
        }
        var text = isForm || isCSV ? value.jsonText : String(buffer: buffer)
        if case .object = value { text = "[" + text + "]" }
        return TableBody(arrayText: text, columns: resolved, rowCount: rows.count)
    }

    /// PostgREST's 400 `PGRST102` for an array whose elements are not all objects with the same keys.
    private static let keysDiffer = APIError(.badRequest, code: PostgRESTCode.invalidBody, message: "All object keys must match")

    /// A CSV body as a JSON array of objects of text (or null) values; a malformed one is 400 `PGRST102` saying why.
    private static func csv(_ buffer: ByteBuffer) throws -> JSONValue {
        do {
            let (names, rows) = try CSVBody.parse(buffer.readableBytesView)
            return .array(
                rows.map { row in .object(Dictionary(uniqueKeysWithValues: zip(names, row.map { $0.map(JSONValue.string) ?? .null }))) })
        } catch {
            throw APIError(.badRequest, code: PostgRESTCode.invalidBody, message: error.message)
        }
    }

    /// A form body as one JSON object of text values (`+` a space, `%XX` a byte, any other `%` itself; invalid UTF-8
    /// and NUL refused as in a query string).
    private static func form(_ buffer: ByteBuffer) throws -> JSONValue {
        do {
            let pairs = try QueryGrammar.pairs(rawQuery: String(decoding: buffer.readableBytesView, as: UTF8.self))
            return .object(Dictionary(pairs.map { ($0.key, JSONValue.string($0.value)) }, uniquingKeysWith: { first, _ in first }))
        } catch {
            throw APIError(.badRequest, code: PostgRESTCode.invalidBody, message: "Empty or invalid form body", details: error.details)
        }
    }
}
