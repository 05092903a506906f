public import Foundation

/// A bound statement parameter (`$1`, `$2`, …). SQL text is never built from values: they travel separately.
public struct PostgresParameter: Sendable, Hashable {
    enum Storage: Sendable, Hashable {
        case null
        case text(String)
        case binary([UInt8])
    }

    let storage: Storage
    /// The parameter's type OID, or 0 to let the server infer it from context.
    let typeOID: UInt32

    init(_ storage: Storage, typeOID: UInt32 = 0) {
        self.storage = storage
        self.typeOID = typeOID
    }

    /// SQL `NULL`.
    public static let null = PostgresParameter(.null)
}

/// A Swift value that can be bound as a statement parameter.
public protocol PostgresEncodable: Sendable {
    var postgresParameter: PostgresParameter { get }
}

extension PostgresParameter: PostgresEncodable {
    public var postgresParameter: PostgresParameter { self }
}

extension String: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .init(.text(self)) }
}

extension Substring: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .init(.text(String(self))) }
}

extension Int: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .init(.text(String(self)), typeOID: PostgresType.int8) }
}

extension Int64: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .init(.text(String(self)), typeOID: PostgresType.int8) }
}

extension Int32: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .init(.text(String(self)), typeOID: PostgresType.int4) }
}

extension Bool: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .init(.text(self ? "t" : "f"), typeOID: PostgresType.bool) }
}

extension Double: PostgresEncodable {
    public var postgresParameter: PostgresParameter {
        let text: String
        if self.isNaN {
            text = "NaN"
        } else if self.isInfinite {
            text = self > 0 ? "Infinity" : "-Infinity"
        } else {
            text = "\(self)"
        }
        return .init(.text(text), typeOID: PostgresType.float8)
    }
}

extension UUID: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .init(.text(self.uuidString), typeOID: PostgresType.uuid) }
}

extension Date: PostgresEncodable {
    public var postgresParameter: PostgresParameter {
        .init(.text(RFC3339.format(self)), typeOID: PostgresType.timestamptz)
    }
}

extension PostgresDate: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .init(.text(self.description), typeOID: PostgresType.date) }
}

extension PostgresJSON: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .init(.text(self.text), typeOID: PostgresType.jsonb) }
}

extension Array: PostgresEncodable where Element == UInt8 {
    public var postgresParameter: PostgresParameter { .init(.binary(self), typeOID: PostgresType.bytea) }
}

extension Data: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .init(.binary(Array(self)), typeOID: PostgresType.bytea) }
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public var postgresParameter: PostgresParameter {
        switch self {
        case .none: return .null
        case .some(let value): return value.postgresParameter
        }
    }
}

/// A statement with its bound parameters.
public struct PostgresStatement: Sendable {
    public let sql: String
    public let parameters: [PostgresParameter]
    /// Whether a pipeline may prepare the statement once per connection and reuse its plan (for statements a
    /// service runs again and again; parameter types are fixed by the first use).
    public var reusesPlan: Bool
    /// For a statement whose text varies with the request (a table request's shape: its columns, filters and order):
    /// prepared and reused as with `reusesPlan`, but only while the session holds fewer than half its limit of prepared
    /// statements, so that many shapes never crowd out the fixed statements. PostgreSQL then parses and plans a shape
    /// once per connection rather than on every request (its own choice of custom or generic plan after the fifth).
    public var reusesPlanWhileRoom = false

    /// - Parameters:
    ///   - sql: SQL text with `$1`… placeholders; never interpolate values into it.
    ///   - parameters: the values for the placeholders, in order.
    ///   - reusesPlan: prepare once per connection and reuse (see `reusesPlan`).
    public init(_ sql: String, _ parameters: [any PostgresEncodable] = [], reusesPlan: Bool = false) {
        self.sql = sql
        self.parameters = parameters.map(\.postgresParameter)
        self.reusesPlan = reusesPlan
    }
}

/// Type OIDs of the built-in types this layer encodes and decodes.
public enum PostgresType {
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let name: UInt32 = 19
    public static let int8: UInt32 = 20
    public static let int2: UInt32 = 21
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let oid: UInt32 = 26
    public static let json: UInt32 = 114
    public static let float4: UInt32 = 700
    public static let float8: UInt32 = 701
    public static let varchar: UInt32 = 1043
    public static let date: UInt32 = 1082
    public static let timestamp: UInt32 = 1114
    public static let timestamptz: UInt32 = 1184
    public static let numeric: UInt32 = 1700
    public static let uuid: UInt32 = 2950
    public static let jsonb: UInt32 = 3802
    public static let void: UInt32 = 2278
}
