import Foundation
import Testing

@testable import PostgRESTGrammar

/// PostgREST's CSV request body (`CSVBody`): the forms it reads, what it refuses, and a round trip over generated
/// tables whose values hold every character CSV quotes.
@Suite struct CSVBodyTests {
    static func parse(_ text: String) throws -> (names: [String], rows: [[String?]]) { try CSVBody.parse(Array(text.utf8)) }

    @Test func headerThenRowsWithNullsQuotesAndLineEnds() throws {
        let plain = try Self.parse("a,b\nbar,baz")
        #expect(plain.names == ["a", "b"] && plain.rows == [["bar", "baz"]])
        #expect(try Self.parse("a,b\nNULL,foo\n").rows == [[nil, "foo"]], "NULL is SQL NULL, a final line end ends nothing")
        #expect(try Self.parse("a,b\r\n\"x,\"\"y\"\"\",\"two\r\nlines\"\r\n,\"\"\r\n").rows == [["x,\"y\"", "two\r\nlines"], ["", ""]])
        #expect(try Self.parse("id,name,client_id\n8,Xenix,1\n9,Windows NT,1").rows == [["8", "Xenix", "1"], ["9", "Windows NT", "1"]])
        #expect(try Self.parse("a\n").rows.isEmpty, "a header alone is no row")
        #expect(try Self.parse("é,\"NULL\"\nà,ü").names == ["é", "NULL"])
    }

    @Test(arguments: [
        ("a,b\nfoo,bar\nbaz", "All lines must have same number of fields"),
        ("a,b\nfoo,bar,baz", "All lines must have same number of fields"),
        ("a,b\n\"foo,bar", "A quoted CSV field is not closed"),
        ("a,b\n\"foo\"x,bar", "A quoted CSV field must end at a comma or a line end"),
        ("a,a\n1,2", "The CSV header names a column twice"),
        ("a,\n1,2", "A column name in the CSV header is empty"),
        ("", "The CSV body has no header line"),
        ("a\n\u{0}", "A CSV field holds a NUL character"),
    ])
    func malformedBodiesAreRefusedSayingWhy(_ text: String, _ message: String) {
        #expect(throws: CSVBody.Failure(message: message)) { try Self.parse(text) }
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: CSVBody.Failure(message: "The CSV body is not valid UTF-8")) { try CSVBody.parse([0x61, 0x0A, 0xC3]) }
    }

    /// Tables of random text (commas, quotes, CR, LF, spaces, non-ASCII), written as a CSV writer quotes them, read
    /// back unchanged; and every prefix of each body either parses or is refused with a Failure, never a crash.
    @Test func generatedTablesRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["a", "b", "Z", "0", ",", "\"", "\r", "\n", " ", "é", "ü", "—"]
        func text(nonEmpty: Bool) -> String {
            let length = Int.random(in: (nonEmpty ? 1 : 0)...6, using: &generator)
            let value = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            return value == "NULL" ? "NUL" : value
        }
        func encoded(_ value: String) -> String {
            // By scalar: "\r\n" is one Character, so a Character test would miss a lone CR or LF.
            value.unicodeScalars.contains(where: { ",\"\r\n".unicodeScalars.contains($0) }) || value.isEmpty
                ? "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : value
        }
        for _ in 0..<500 {
            let width = Int.random(in: 1...4, using: &generator)
            var names: [String] = []
            while names.count < width {
                let name = text(nonEmpty: true)
                if !names.contains(name) { names.append(name) }
            }
            let rows = (0..<Int.random(in: 0...4, using: &generator)).map { _ in (0..<width).map { _ in text(nonEmpty: false) } }
            let ending = Bool.random(using: &generator) ? "\r\n" : "\n"
            let body =
                ([names] + rows).map { $0.map(encoded).joined(separator: ",") }.joined(separator: ending)
                + (Bool.random(using: &generator) ? ending : "")
            let parsed = try Self.parse(body)
            #expect(parsed.names == names, "\(body.debugDescription)")
            #expect(parsed.rows == rows.map { $0.map(Optional.some) }, "\(body.debugDescription)")
            let bytes = Array(body.utf8)
            for cut in stride(from: 0, through: bytes.count, by: max(1, bytes.count / 7)) {
                _ = try? CSVBody.parse(bytes[..<cut])
            }
        }
    }
}
