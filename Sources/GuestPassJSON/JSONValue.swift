import GuestPassCrypto

/// Any JSON value, for client-chosen documents such as `user_metadata` and RPC arguments; numbers keep the text they
/// were written with (`JSONNumber`).
///
/// Made from text by `JSONValue.parse` (`JSONParser`), written by `CompactJSONEncoder` (`jsonText`, responses, token
/// claims). Not `Decodable`: Foundation's `JSONDecoder` would read every number as a `Double`, rounding
/// `9007199254740993` and refusing `1e399`.
public enum JSONValue: Encodable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The members, when this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The text, when this is a string.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// Serialised JSON text (`CompactJSONEncoder`: keys sorted, no whitespace, numbers as written). Encoding a
    /// `JSONValue` cannot fail; `null` would stand for a failure.
    public var jsonText: String {
        String(decoding: (try? CompactJSONEncoder().encode(self)) ?? Array("null".utf8), as: UTF8.self)
    }

    /// Parses JSON text (strictly, in one pass: see `JSONParser`).
    public static func parse(_ text: String) throws -> JSONValue {
        try JSONParser.parse(text.utf8)
    }
}
