import GuestPassTestSupport
import Testing

@testable import PostgRESTGrammar

/// `CommonShapes` answers exactly what the grammar answers, for every text it reads: texts built from the words of the
/// common shapes and their near misses (quotes, spaces, dashes, arrows, casts, non-ASCII letters), each compared with
/// the grammar's own answer. Whatever the scan declines goes to the grammar, so errors are not compared here (the
/// grammar's error tests and `FuzzTests` cover them).
@Suite struct CommonShapesTests {
    static let words = [
        "a", "b1", "_x", "$y", "kind", "count", "not", "not.", ".", ".", ",", ",", "*", "(", ")", "\"", " ", "\t", "-", "->", ">", ":",
        "::", "!", "{", "}", "eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike", "match", "is", "in", "isdistinct", "fts", "cs", "adj",
        "null", "NuLL", "not_null", "true", "FALSE", "unknown", "un\u{212A}nown", "asc", "desc", "nullsfirst", "nullslast", "0", "-1",
        "007", "12345678901234567890", "é", "any", "(any)",
    ]

    static func text(_ generator: inout SeededGenerator) -> String {
        (0..<Int.random(in: 1...8, using: &generator)).map { _ in Self.words.randomElement(using: &generator) ?? "a" }.joined()
    }

    /// Runs `scan` and the grammar on `count` generated texts (plus `extra`); every text the scan reads must get the
    /// grammar's answer. Returns how many the scan read, so that a test also shows the scan is exercised.
    static func compare<Output: Equatable>(
        _ scan: (String) -> Output?, _ grammar: Parser<Output>, extra: [String] = [], seed: UInt64, count: Int = 20_000
    ) -> Int {
        var generator = SeededGenerator(seed: seed)
        var read = 0
        for text in extra + (0..<count).map({ _ in Self.text(&generator) }) {
            guard let scanned = scan(text) else { continue }
            read += 1
            let parsed = try? QueryGrammar.run(grammar, on: text, context: "")
            #expect(parsed == scanned, "\(text)")
        }
        return read
    }

    @Test func filtersAnswerAsTheGrammar() {
        // Texts that start as a filter does (`[not.]op.`), then anything.
        var generator = SeededGenerator(seed: 0xF1F)
        let starts = (0..<10_000).map { _ in
            ["", "not."].randomElement(using: &generator)! + Self.words.randomElement(using: &generator)! + "."
                + (Bool.random(using: &generator) ? "(" : "") + Self.text(&generator)
        }
        let read = Self.compare(
            CommonShapes.condition, Grammars.filter,
            extra: [
                "eq.palm", "not.eq.", "gte.5", "gt.5", "in.()", "in.(a,,b)", "not.in.(1,2)", "is.NULL", "not.is.not_null", "isdistinct.x",
                "like.a*b", "eq.a.b,c(d)", "in.(é,\u{212A})",
            ] + starts,
            seed: 0xF11)
        #expect(read > 500, "the scan read \(read) texts")
    }

    @Test func selectAnswersAsTheGrammar() {
        let read = Self.compare(CommonShapes.select, Grammars.select, extra: ["*", "a,b", "*,count", "count", "a,*", "1"], seed: 0x5E1)
        #expect(read > 500, "the scan read \(read) texts")
    }

    @Test func orderAnswersAsTheGrammar() {
        let read = Self.compare(
            CommonShapes.order, Grammars.order, extra: ["a.desc", "a.asc.nullslast,b", "a.nullsfirst", "created_at.desc,id"], seed: 0x0DE)
        #expect(read > 500, "the scan read \(read) texts")
    }

    @Test func columnsAnswerAsTheGrammar() {
        let read = Self.compare(CommonShapes.columns, Grammars.columns, extra: ["a,b", "kind"], seed: 0xC01)
        #expect(read > 500, "the scan read \(read) texts")
    }

    @Test func keysAnswerAsTheGrammar() {
        var generator = SeededGenerator(seed: 0x7EE)
        var read = 0
        for text in ["kind", "a", "$y"] + (0..<20_000).map({ _ in Self.text(&generator) }) {
            guard let scanned = CommonShapes.treePath(text) else { continue }
            read += 1
            let parsed = try? QueryGrammar.run(Grammars.treePath, on: text, context: "")
            #expect(parsed?.path == scanned.path && parsed?.field == scanned.field, "\(text)")
            #expect(CommonShapes.embeddingPath(ofKey: text) == parsed?.path, "\(text)")
        }
        #expect(read > 500, "the scan read \(read) keys")
    }

    @Test func integersAnswerAsTheGrammar() throws {
        var generator = SeededGenerator(seed: 0x1A7)
        var read = 0
        for text in ["10", "-5", "007", "-0", "123456789012345678"] + (0..<20_000).map({ _ in Self.text(&generator) }) {
            guard let scanned = CommonShapes.integer(text) else { continue }
            read += 1
            #expect(try parsePairs([("limit", "1"), ("offset", text)]).root.offset == (scanned >= 0 ? scanned : nil), "\(text)")
            #expect(Int(text) == scanned, "\(text)")
        }
        #expect(read > 20, "the scan read \(read) integers")
    }

    /// A whole query string of the common shapes parses to what the grammar alone builds from the same pairs.
    @Test func aTableReadParsesAsTheGrammarBuildsIt() throws {
        let query = try parseQuery("select=*&kind=eq.palm&order=created_at.desc&limit=10&offset=20")
        #expect(query.select == [.star])
        #expect(query.root.filters == [filter("kind", .eq, "palm")])
        #expect(query.root.order == [OrderTerm(field: field("created_at"), direction: .desc)])
        #expect(query.root.limit == 10 && query.root.offset == 20)
    }
}
