/// The `aud` claim: one string or an array of strings (RFC 7519 §4.1.3).
///
/// Encodes a single audience as a plain string, several as an array.
public struct JWTAudience: Codable, Hashable, Sendable, ExpressibleByStringLiteral, ExpressibleByArrayLiteral {
    /// The audience values, in token order.
    public let values: [String]

    public init(_ values: [String]) {
        self.values = values
    }

    public init(stringLiteral value: String) {
        self.values = [value]
    }

    public init(arrayLiteral elements: String...) {
        self.values = elements
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let single = try? container.decode(String.self) {
            self.values = [single]
        } else {
            self.values = try container.decode([String].self)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if self.values.count == 1 {
            try container.encode(self.values[0])
        } else {
            try container.encode(self.values)
        }
    }
}
