import Foundation
import Testing

@testable import GuestPassCrypto

/// `CompactJSONEncoder` writes what Foundation's `JSONEncoder` writes (same JSON values), in its documented byte form.
@Suite struct CompactJSONEncoderTests {
    struct Inner: Codable, Equatable {
        let name: String
        let tags: [String]
    }

    struct Everything: Codable {
        let text: String
        let int: Int
        let int8: Int8
        let int16: Int16
        let int32: Int32
        let int64: Int64
        let uint: UInt
        let uint8: UInt8
        let uint64: UInt64
        let double: Double
        let wholeDouble: Double
        let bigDouble: Double
        let float: Float
        let flag: Bool
        let missing: String?
        let present: String?
        let inner: Inner
        let list: [Inner]
        let map: [String: Int]
        let date: Date
    }

    static let everything = Everything(
        text: "quote \" backslash \\ slash / newline \n tab \t bell \u{07} nul \u{00} é 東 🙂", int: -42, int8: -8,
        int16: 16, int32: -32, int64: 9_007_199_254_740_993, uint: 7, uint8: 255, uint64: UInt64.max, double: 0.1,
        wholeDouble: 3, bigDouble: 1e20, float: 0.5, flag: true, missing: nil, present: "here",
        inner: Inner(name: "n", tags: ["a", "b"]), list: [Inner(name: "x", tags: []), Inner(name: "y", tags: ["z"])],
        map: ["zeta": 1, "alpha": 2, "mu": 3], date: Date(timeIntervalSince1970: 1_700_000_000)
    )

    private func foundationObject(_ value: some Encodable) throws -> NSDictionary {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        return try #require(try JSONSerialization.jsonObject(with: encoder.encode(value)) as? NSDictionary)
    }

    @Test func encodesTheSameJSONValuesAsFoundation() throws {
        let ours = try CompactJSONEncoder().encode(Self.everything)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(ours)) as? NSDictionary)
        #expect(object == (try self.foundationObject(Self.everything)))
        #expect(object["missing"] == nil, "a nil optional is left out")
        #expect(StrictJSON.isObject(ours), "our own strict parser accepts it")
    }

    @Test func bytesAreCompactSortedAndEscaped() throws {
        struct Claims: Encodable {
            let iss = "https://a.example/auth/v1"
            let is_anonymous = true
            let exp = 1_700_000_000
            let amr = [["method": "anonymous"]]
            let note = "line\nquote\"\u{01}"
            let ratio = 2.5
        }
        let text = String(decoding: try CompactJSONEncoder().encode(Claims()), as: UTF8.self)
        #expect(
            text
                == #"{"amr":[{"method":"anonymous"}],"exp":1700000000,"is_anonymous":true,"iss":"https://a.example/auth/v1","note":"line\nquote\"\u0001","ratio":2.5}"#
        )
    }

    @Test func nonFiniteNumbersAndEmptyValuesAreRefused() {
        struct Bad: Encodable { let value: Double }
        struct Nothing: Encodable { func encode(to encoder: any Encoder) throws {} }
        #expect(throws: EncodingError.self) { try CompactJSONEncoder().encode(Bad(value: .nan)) }
        #expect(throws: EncodingError.self) { try CompactJSONEncoder().encode(Bad(value: .infinity)) }
        #expect(throws: EncodingError.self) { try CompactJSONEncoder().encode(Nothing()) }
    }

    /// A `JSONNumberLiteral` is written digit for digit, wherever it sits; its text is checked when it is made, and
    /// Foundation's encoder, which would round it, refuses it.
    @Test func numberLiteralsAreWrittenAsGiven() throws {
        let big = try #require(JSONNumberLiteral("9007199254740993"))
        let exact = try #require(JSONNumberLiteral("0.1000000000000000055511151231257827"))
        let huge = try #require(JSONNumberLiteral("-1.50E+400"))
        #expect(try CompactJSONEncoder().encode(big) == Array("9007199254740993".utf8))
        #expect(
            try CompactJSONEncoder().encode(["a": [exact], "b": [huge]])
                == Array(#"{"a":[0.1000000000000000055511151231257827],"b":[-1.50E+400]}"#.utf8))
        for invalid in ["", "+1", "01", ".5", "1.", "1e", "-", "NaN", "inf", " 1", "1 ", "0x10", "1_000"] {
            #expect(JSONNumberLiteral(invalid) == nil, "\(invalid.debugDescription)")
        }
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(big) }
    }

    @Test func roundTripsThroughJSONDecoder() throws {
        let bytes = try CompactJSONEncoder().encode(Self.everything.list)
        #expect(try JSONDecoder().decode([Inner].self, from: Data(bytes)) == Self.everything.list)
    }
}

/// The parts of `CompactJSONEncoder` that differ from a naive tree: the shared scalar buffer (containers filled out of
/// order), keys given twice, coding paths built only on error, and `encodeObject`'s depth check against `StrictJSON`.
@Suite struct CompactJSONEncoderStructureTests {
    /// Takes a nested container for "a", writes "b", then fills "a": the scalars of both land in one buffer interleaved.
    struct OutOfOrder: Encodable {
        enum Key: String, CodingKey { case a, b, x, y }
        func encode(to encoder: any Encoder) throws {
            var top = encoder.container(keyedBy: Key.self)
            var a = top.nestedContainer(keyedBy: Key.self, forKey: .a)
            var list = top.nestedUnkeyedContainer(forKey: .y)
            try top.encode("second", forKey: .b)
            try a.encode("first", forKey: .x)
            try list.encode(1)
            try top.encode(true, forKey: .x)
            try list.encode("two")
            try a.encode(2.5, forKey: .y)
        }
    }

    @Test func containersFilledOutOfOrderKeepTheirOwnValues() throws {
        let text = String(decoding: try CompactJSONEncoder().encode(OutOfOrder()), as: UTF8.self)
        #expect(text == #"{"a":{"x":"first","y":2.5},"b":"second","x":true,"y":[1,"two"]}"#)
    }

    /// Encodes "k" three times and "a" twice; Foundation keeps each key's last value.
    struct Repeated: Encodable {
        enum Key: String, CodingKey { case k, a, z }
        func encode(to encoder: any Encoder) throws {
            var top = encoder.container(keyedBy: Key.self)
            try top.encode(1, forKey: .k)
            try top.encode("x", forKey: .z)
            try top.encode(2, forKey: .k)
            try top.encode(false, forKey: .a)
            try top.encode([3], forKey: .k)
            try top.encode(true, forKey: .a)
        }
    }

    @Test func aKeyGivenTwiceIsWrittenOnceWithItsLastValue() throws {
        let ours = try CompactJSONEncoder().encode(Repeated())
        #expect(String(decoding: ours, as: UTF8.self) == #"{"a":true,"k":[3],"z":"x"}"#)
        #expect(StrictJSON.isObject(ours), "no duplicate member reaches the text")
        let foundation = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Repeated())) as? NSDictionary
        #expect(try JSONSerialization.jsonObject(with: Data(ours)) as? NSDictionary == foundation)
    }

    @Test func anErrorNamesWhereTheValueIs() throws {
        struct Leaf: Encodable { let value: Double }
        struct Top: Encodable { let outer: [Leaf] }
        do {
            _ = try CompactJSONEncoder().encode(Top(outer: [Leaf(value: 1), Leaf(value: .nan)]))
            Issue.record("a NaN was encoded")
        } catch EncodingError.invalidValue(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["outer", "Index 1", "value"])
        }
    }

    /// `[[…[inner]…]]` nested `levels` arrays deep, inside `{"v": …}`.
    struct Nested: Encodable {
        let levels: Int
        let innerIsEmpty: Bool
        enum Key: String, CodingKey { case v }
        func encode(to encoder: any Encoder) throws {
            var top = encoder.container(keyedBy: Key.self)
            var list = top.nestedUnkeyedContainer(forKey: .v)
            for _ in 1..<self.levels { list = list.nestedUnkeyedContainer() }
            if !self.innerIsEmpty { try list.encode(0) }
        }
    }

    @Test func encodeObjectAcceptsExactlyWhatStrictJSONAccepts() throws {
        let limit = StrictJSON.maximumDepth
        for levels in (limit - 3)...(limit + 2) {
            for innerIsEmpty in [false, true] {
                let value = Nested(levels: levels, innerIsEmpty: innerIsEmpty)
                let text = try CompactJSONEncoder().encode(value)
                let checked = try CompactJSONEncoder().encodeObject(value, maximumDepth: limit)
                #expect((checked != nil) == StrictJSON.isObject(text), "\(levels) levels, inner empty: \(innerIsEmpty)")
                if let checked { #expect(checked == text) }
            }
        }
        #expect(try CompactJSONEncoder().encodeObject(Nested(levels: limit - 1, innerIsEmpty: false), maximumDepth: limit) != nil)
        #expect(try CompactJSONEncoder().encodeObject(Nested(levels: limit, innerIsEmpty: false), maximumDepth: limit) == nil)
        #expect(try CompactJSONEncoder().encodeObject([1, 2], maximumDepth: limit) == nil, "an array is not an object")
        #expect(try CompactJSONEncoder().encodeObject("text", maximumDepth: limit) == nil, "a string is not an object")
    }
}
