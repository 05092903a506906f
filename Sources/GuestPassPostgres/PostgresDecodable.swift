public import Foundation

/// A Swift type that can be decoded from a result cell (text format). Non-optional types reject `NULL`.
public protocol PostgresDecodable {
    init(postgresCell cell: PostgresCell) throws
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = cell.isNull ? .none : .some(try Wrapped(postgresCell: cell))
    }
}

extension String: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = try cell.requireText("text") }
}

extension Int: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = try cell.parseText("integer") { Int($0) }
    }
}

extension Int64: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = try cell.parseText("integer") { Int64($0) }
    }
}

extension Int32: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = try cell.parseText("integer") { Int32($0) }
    }
}

extension Bool: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = try cell.parseText("boolean") { text in
            switch text {
            case "t": true
            case "f": false
            default: nil
            }
        }
    }
}

extension Double: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = try cell.parseText("double") { text in
            switch text {
            case "NaN": .nan
            case "Infinity": .infinity
            case "-Infinity": -.infinity
            default: Double(text)
            }
        }
    }
}

extension UUID: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = try cell.parseText("uuid") { UUID(uuidString: $0) }
    }
}

extension Date: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = try cell.parseText("timestamptz") { TimestampText.parse($0) }
    }
}

extension PostgresDate: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = try cell.parseText("date") { PostgresDate(iso: $0) }
    }
}

extension PostgresJSON: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        guard cell.typeOID == PostgresType.json || cell.typeOID == PostgresType.jsonb else {
            throw cell.decodingError("json")
        }
        self.init(text: try cell.requireText("json"))
    }
}

extension Array: PostgresDecodable where Element == UInt8 {
    public init(postgresCell cell: PostgresCell) throws {
        guard cell.typeOID == PostgresType.bytea else { throw cell.decodingError("bytea") }
        self = try cell.parseText("bytea") { ByteaText.parse($0) }
    }
}

extension Data: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = Data(try [UInt8](postgresCell: cell)) }
}
