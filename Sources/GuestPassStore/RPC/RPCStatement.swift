import Foundation
public import GuestPassJSON
public import GuestPassPostgres

/// The SQL of one RPC call: the function's catalog entry (names, types, result shape) and the request's values,
/// which are always bound as parameters, never spliced in. Throws `PostgRESTRefusal` for an argument it cannot bind.
public enum RPCStatement {
    /// `SELECT <shape>(schema.fn(name => $1::type, …)), <rows>`: names and types come from the catalog, values are
    /// bound. The second column is the number of rows answered (1 for a scalar or one row), for `Content-Range`.
    public static func statement(for function: RPCFunction, arguments: [String: JSONValue]) throws -> PostgresStatement {
        let (call, parameters) = try self.call(function, arguments)
        let sql: String
        switch function.shape {
        case .scalar: sql = "SELECT to_json(\(call))::text, 1::bigint"
        // The subquery makes `r` a row even for a one-column RETURNS TABLE (whose result type is that column's).
        case .row: sql = "SELECT to_json(r)::text, 1::bigint FROM (SELECT * FROM \(call)) AS r"
        case .setOfRows: sql = "SELECT coalesce(json_agg(r), '[]')::text, count(*) FROM (SELECT * FROM \(call)) AS r"
        case .setOfScalars: sql = "SELECT coalesce(json_agg(r.v), '[]')::text, count(*) FROM \(call) AS r(v)"
        case .void: sql = "SELECT \(call)"
        }
        return PostgresStatement(sql, parameters, reusesPlan: true)
    }

    /// The call's rows under the table grammar (`select`, filters, `order`, ranges, `Accept`, `count`): `plan` is built
    /// on `function.resultRelation(in:)`. See `TableStatements.functionResult`.
    public static func statement(for function: RPCFunction, arguments: [String: JSONValue], plan: TablePlan) throws -> PostgresStatement {
        let (call, parameters) = try self.call(function, arguments)
        return try TableStatements.functionResult(plan, call: call, parameters: parameters, oneRow: function.shape == .row)
    }

    /// `schema.fn(name => $1::type, …)` and its parameters: names and types come from the catalog, values are bound.
    private static func call(_ function: RPCFunction, _ arguments: [String: JSONValue]) throws -> (String, [any PostgresEncodable]) {
        var parameters: [any PostgresEncodable] = []
        var named: [String] = []
        if function.takesWholeBody {
            parameters.append(PostgresJSON(text: JSONValue.object(arguments).jsonText))
            named.append("$1::\(function.arguments[0].typeName)")
        } else {
            for argument in function.arguments {
                guard let value = arguments[argument.name] else { continue }
                parameters.append(try self.text(of: value, for: argument))
                named.append("\(quoted(argument.name)) => $\(parameters.count)::\(argument.typeName)")
            }
        }
        return ("\(quoted(function.schema)).\(quoted(function.name))(\(named.joined(separator: ", ")))", parameters)
    }

    /// The text PostgreSQL parses for `value` as the argument's type. A number is its text as written, so
    /// `9007199254740993` for a `bigint` and 40 digits for a `numeric` arrive exactly; as with PostgREST, PostgreSQL
    /// decides what the type accepts (`1.5` or `1e3` for an `integer` is its 22P02, a 400).
    private static func text(of value: JSONValue, for argument: RPCFunction.Argument) throws -> String? {
        switch value {
        case .null: return nil
        case .string(let text): return text
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let number): return number.text
        case .object: return value.jsonText
        case .array(let elements):
            guard argument.typeName.hasSuffix("[]") else { return value.jsonText }
            let items = try elements.map { element -> String in
                switch element {
                case .null: return "NULL"
                case .array, .object:
                    throw PostgRESTRefusal(
                        .badRequest, code: PostgRESTCode.invalidBody, message: "Argument \(argument.name) must be an array of plain values")
                default:
                    let text = try self.text(of: element, for: RPCFunction.Argument(name: argument.name, typeName: "", hasDefault: false)) ?? ""
                    guard text.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") }) else { return "\"" + text + "\"" }
                    return "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
                }
            }
            return "{" + items.joined(separator: ",") + "}"
        }
    }

    /// `identifier` as a quoted SQL identifier. Runs for every call: an identifier without `"` (all of them, in
    /// practice) is not searched by Foundation.
    static func quoted(_ identifier: String) -> String {
        guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
        return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
