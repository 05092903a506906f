import GuestPassCrypto

/// A JSON number kept as the text it was written with, so no digit is lost to a `Double`: `9007199254740993` and
/// `0.1000000000000000055511151231257827` reach PostgreSQL as written (which parses the text as the parameter's or
/// column's type: `bigint`, `numeric`, `jsonb`), and `CompactJSONEncoder` writes them unchanged (`JSONValue.jsonText`,
/// responses, token claims).
///
/// Equality is numeric and exact, computed on the decimal digits: `-12.5e1 == -125`, `1.0 == 1`, `-0 == 0`, but
/// `9007199254740993 != 9007199254740992`. The text is kept as it is (`1.0` is written `1.0`).
///
/// From text, only `JSONParser` makes one (it checks the syntax and the range); in code a number is an integer or a
/// floating-point literal (`.number(3600)`, `.number(1.5)`), written as Swift prints it.
public struct JSONNumber: Encodable, Equatable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
    private let literal: JSONNumberLiteral

    /// The number, as written.
    public var text: String { self.literal.text }

    public var description: String { self.text }

    init(_ literal: JSONNumberLiteral) {
        self.literal = literal
    }

    public init(integerLiteral value: Int) {
        self.literal = JSONNumberLiteral(String(value))!
    }

    /// `value` as Swift prints it (`0.1`, `1e-05`, `1.7976931348623157e+308`): the shortest text that reads back as it.
    public init(floatLiteral value: Double) {
        guard let literal = JSONNumberLiteral(value.description) else { preconditionFailure("\(value) is not a JSON number") }
        self.literal = literal
    }

    public static func == (left: JSONNumber, right: JSONNumber) -> Bool {
        DecimalParts(left.text).value == DecimalParts(right.text).value
    }

    /// The text, unchanged; `CompactJSONEncoder` only (see `JSONNumberLiteral`).
    public func encode(to encoder: any Encoder) throws {
        try self.literal.encode(to: encoder)
    }
}
