import Hummingbird
import NIOCore
import Foundation
import GuestPassJSON
import GuestPassStore

/// Reads the JSON body of a table write: an object or an array of objects, checked strictly (`JSONParser`: no NUL,
/// no invalid UTF-8, bounded depth and size) and then passed to PostgreSQL as the client's own text, so numbers keep
/// every digit. The columns written are `columns=` when given (the body's other keys ignored, missing ones NULL or,
/// with `missing=default`, their default), else the keys of the objects, which must all have the same keys.
enum TableBodyReader {
    static func read(_ request: inout Request, relation: Relation, columns: [String]?, limit: Int) async throws -> TableBody {
        if let type = request.headers[.contentType], !type.isEmpty {
            let mediaType = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard mediaType == "application/json" || mediaType == "*/*" else {
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
            value = try JSONParser.parse(buffer.readableBytesView)
        } catch is JSONParser.Failure {
            // PostgREST's words exactly (no details): aeson's position would not be ours anyway.
            throw APIError(.badRequest, code: PostgRESTCode.invalidBody, message: "Empty or invalid json")
        }
        let rows: [[String: JSONValue]]
        switch value {
        case .object(let object): rows = [object]
        case .array(let elements):
            rows = try elements.map { element in
                guard let object = element.objectValue else {
                    throw APIError(.badRequest, code: PostgRESTCode.invalidBody, message: "All elements of the body must be JSON objects")
                }
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
            guard rows.allSatisfy({ Set($0.keys) == keys }) else {
                throw APIError(.badRequest, code: PostgRESTCode.invalidBody, message: "All object keys must match")
            }
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
        var text = String(buffer: buffer)
        if case .object = value { text = "[" + text + "]" }
        return TableBody(arrayText: text, columns: resolved, rowCount: rows.count)
    }
}
