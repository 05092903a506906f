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
        guard let value = Int(try cell.requireText("integer")) else { throw cell.decodingError("integer") }
        self = value
    }
}

extension Int64: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        guard let value = Int64(try cell.requireText("integer")) else { throw cell.decodingError("integer") }
        self = value
    }
}

extension Int32: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        guard let value = Int32(try cell.requireText("integer")) else { throw cell.decodingError("integer") }
        self = value
    }
}

extension Bool: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        switch try cell.requireText("boolean") {
        case "t": self = true
        case "f": self = false
        default: throw cell.decodingError("boolean")
        }
    }
}

extension Double: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        switch try cell.requireText("double") {
        case "NaN": self = .nan
        case "Infinity": self = .infinity
        case "-Infinity": self = -.infinity
        case let text:
            guard let value = Double(text) else { throw cell.decodingError("double") }
            self = value
        }
    }
}

extension UUID: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        guard let value = UUID(uuidString: try cell.requireText("uuid")) else { throw cell.decodingError("uuid") }
        self = value
    }
}

extension Date: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        guard let value = TimestampText.parse(try cell.requireText("timestamptz")) else {
            throw cell.decodingError("timestamptz")
        }
        self = value
    }
}

extension PostgresDate: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        guard let value = PostgresDate(iso: try cell.requireText("date")) else { throw cell.decodingError("date") }
        self = value
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
        guard cell.typeOID == PostgresType.bytea, let value = ByteaText.parse(try cell.requireText("bytea")) else {
            throw cell.decodingError("bytea")
        }
        self = value
    }
}

extension Data: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = Data(try [UInt8](postgresCell: cell)) }
}
