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

    @Test func roundTripsThroughJSONDecoder() throws {
        let bytes = try CompactJSONEncoder().encode(Self.everything.list)
        #expect(try JSONDecoder().decode([Inner].self, from: Data(bytes)) == Self.everything.list)
    }
}
