import Foundation
import Testing

@testable import GuestPassApp
import GuestPassJSON

/// The request-body JSON parser: strict RFC 8259, text PostgreSQL can store, bounded depth and size.
@Suite struct JSONParserTests {
    static func parse(_ bytes: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth, maxValues: Int = JSONParser.defaultMaxValues) throws -> JSONValue
    {
        try JSONParser.parse(bytes, maxDepth: maxDepth, maxValues: maxValues)
    }

    static func parse(_ text: String) throws -> JSONValue { try self.parse(Array(text.utf8)) }

    @Test func parsesEveryKindOfValue() throws {
        let value = try Self.parse(#" {"s":"a\"b\\c\/\n\u00e9\ud83d\ude00 é","n":-12.5e1,"z":0,"t":true,"f":false,"x":null,"a":[1,[],{}]} "#)
        #expect(
            value
                == .object([
                    "s": .string("a\"b\\c/\né😀 é"), "n": .number(-125), "z": .number(0), "t": .bool(true), "f": .bool(false), "x": .null,
                    "a": .array([.number(1), .array([]), .object([:])]),
                ])
        )
        #expect(try Self.parse(#"{"k":1,"k":2}"#) == .object(["k": .number(2)]), "the last duplicate wins")
    }

    @Test(arguments: [
        #"{"a":"\u0000"}"#, "{\"a\":\"x\u{0}y\"}", #"{"a":"\ud800"}"#, #"{"a":"\udc00"}"#, #"{"a":"\ud800\u0041"}"#,
        #"{"a":"\ud800x"}"#, "{\"a\":\"\u{1}\"}", #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":1e}"#, #"{"a":-}"#,
        #"{"a":1e999}"#, #"{"a":tru}"#, #"{"a":nul}"#, #"{"a" 1}"#, #"{"a":1,}"#, #"[1,]"#, #"{"a":1} x"#, #"{'a':1}"#,
        #"{"a":"\x"}"#, #"{"a":"\u12"}"#, "", " ", #"{"a":"unterminated"#, #"{"a":[1,2"#,
    ])
    func refusesInvalidDocuments(_ text: String) {
        #expect(throws: JSONParser.Failure.self, "\(text.debugDescription)") { try Self.parse(text) }
    }

    @Test(
        arguments: [
            [0xFF], [0xFE], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xC3], [0xE2, 0x82], [0x80],
        ] as [[UInt8]])
    func refusesInvalidUTF8(_ bytes: [UInt8]) {
        let document = Array(#"{"a":""#.utf8) + bytes + Array(#""}"#.utf8)
        #expect(throws: JSONParser.Failure.self) { try Self.parse(document) }
    }

    @Test func acceptsEveryValidUTF8Length() throws {
        let text = "aé€😀"
        #expect(try Self.parse(Array(#"{"a":""#.utf8) + Array(text.utf8) + Array(#""}"#.utf8)) == .object(["a": .string(text)]))
    }

    @Test func limitsDepthAndSize() throws {
        let deep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        #expect(throws: JSONParser.Failure.self) { try Self.parse(deep) }
        let fine = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        #expect(throws: Never.self) { try Self.parse(fine) }
        // A million-deep document fails fast, without exhausting the stack.
        let huge = String(repeating: "[", count: 1_000_000)
        #expect(throws: JSONParser.Failure.self) { try Self.parse(huge) }

        let many = "[" + Array(repeating: "{}", count: 100).joined(separator: ",") + "]"
        #expect(throws: JSONParser.Failure.self) { try Self.parse(Array(many.utf8), maxValues: 100) }
        #expect(throws: Never.self) { try Self.parse(Array(many.utf8), maxValues: 101) }
    }

    /// Found by schemathesis (issue 13): `PUT /auth/v1/user {"data": {"n": -5.76e231}}` stored the number, PostgreSQL's
    /// jsonb gave it back as 232 digits, and reading the profile refused them: a 500 on every later sign-in.
    @Test func acceptsEveryFiniteDoubleAsPostgreSQLWritesIt() throws {
        let big = "-5760016731011541" + String(repeating: "0", count: 216)
        #expect(try Self.parse(#"{"n":\#(big)}"#) == .object(["n": .number(-5.760016731011541e231)]))
        let largest = "17976931348623157" + String(repeating: "0", count: 292)
        #expect(try Self.parse("[\(largest)]") == .array([.number(1.7976931348623157e308)]))
        let smallest = "0." + String(repeating: "0", count: 323) + "5"
        // The smallest subnormal, 5e-324: as a literal Swift warns that it loses precision, so it is named.
        #expect(try Self.parse("[\(smallest)]") == .array([.number(JSONNumber(floatLiteral: .leastNonzeroMagnitude))]))
        let tooLong = "1" + String(repeating: "0", count: JSONParser.maxNumberLength)
        #expect(throws: JSONParser.Failure.self) { try Self.parse("[\(tooLong)]") }
    }

    /// A number keeps the text it was written with: integers beyond 2^53, decimals beyond a `Double`'s 17 significant
    /// digits, trailing zeros (PostgreSQL's `numeric` keeps the scale), exponents and `-0` come out byte for byte.
    @Test(arguments: [
        "9007199254740993", "-9223372036854775808", "123456789012345678901234567890.123456789", "0.1",
        "0.1000000000000000055511151231257827", "1.50", "-0", "1E+2", "2.5e-3",
    ])
    func keepsNumbersAsWritten(_ literal: String) throws {
        #expect(try Self.parse("[\(literal)]").jsonText == "[\(literal)]")
        #expect(try Self.parse(#"{"n":\#(literal)}"#).jsonText == #"{"n":\#(literal)}"#)
    }

    /// The range is PostgreSQL's, bounded by what a later read of the stored value accepts: a number is refused when
    /// PostgreSQL would write it back (as `numeric`, in plain decimal) in more than `maxNumberLength` bytes, whether or
    /// not a `Double` can hold it.
    @Test func refusesWhatPostgreSQLWouldWriteTooLong() throws {
        for accepted in ["1e399", "-1e398", "1e-398", "0e-398", "1.5e-397", "0e999"] {
            #expect(try Self.parse("[\(accepted)]").jsonText == "[\(accepted)]", "\(accepted)")
        }
        for refused in ["1e400", "-1e399", "1e-399", "0e-399", "1.5e-398", "10e399", "1e999999999999"] {
            #expect(throws: JSONParser.Failure.self, "\(refused)") { try Self.parse("[\(refused)]") }
        }
    }

    /// Equality is numeric and exact: the same value written differently is equal, neighbours a `Double` cannot tell
    /// apart are not.
    @Test func numbersAreEqualWhenTheirValuesAre() throws {
        #expect(
            try Self.parse("[-12.5e1,1.0,100e-2,0,-0.0,0.1]")
                == .array([.number(-125), .number(1), .number(1), .number(0), .number(0), .number(0.1)]))
        #expect(try Self.parse("[9007199254740993]") != .array([.number(9007199254740992)]))
        #expect(try Self.parse("[0.1000000000000000055511151231257827]") != .array([.number(0.1)]))
        #expect(try Self.parse("[1]") != .array([.number(-1)]))
    }

    @Test func roundTripsThroughJSONText() throws {
        let value = JSONValue.object(["a": .array([.string("x\u{1F600}\"\\"), .number(1.5), .null, .bool(false)])])
        #expect(try JSONValue.parse(value.jsonText) == value)
    }
}
