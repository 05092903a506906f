import GuestPassTestSupport
import Testing

@testable import PostgRESTGrammar

/// Random and generated inputs: the parser only ever returns a value or throws `QueryGrammarError`, generated valid
/// trees parse to what generated them, and sizes and depths are handled without traps or stack overflows.
@Suite struct FuzzTests {
    static let alphabet = Array(#".,()":!*->{}\%+&=;  abcnotreqinslk0123456789_$é"#)

    static func randomText(_ generator: inout SeededGenerator, maximumLength: Int = 24) -> String {
        String((0..<Int.random(in: 0...maximumLength, using: &generator)).map { _ in Self.alphabet.randomElement(using: &generator) ?? "a" })
    }

    @Test func randomTextNeverTraps() {
        var generator = SeededGenerator(seed: 0x5EED)
        let keys = [
            "select", "order", "limit", "offset", "columns", "on_conflict", "or", "and", "not.or", "col", "rel.col", "data->>a", "rel.order",
            "rel.limit",
        ]
        var parsed = 0
        var refused = 0
        for _ in 0..<3_000 {
            let text = Self.randomText(&generator)
            for key in keys {
                do {
                    _ = try QueryGrammar.parse([(key: key, value: text)])
                    parsed += 1
                } catch {
                    refused += 1
                }
            }
            do {
                _ = try QueryGrammar.parse([(key: text, value: Self.randomText(&generator))])
                _ = try QueryGrammar.parse(QueryGrammar.pairs(rawQuery: text + "=" + Self.randomText(&generator)))
                _ = try QueryGrammar.parse(QueryGrammar.pairs(rawQuery: text))
            } catch {
                refused += 1
            }
            _ = QueryGrammar.range(header: text)
            _ = Preferences.parse(headers: [text])
        }
        #expect(parsed > 500 && refused > 500, "both outcomes are exercised: \(parsed) parsed, \(refused) refused")
    }

    @Test func randomPrefixesOfValidRequestsNeverTrap() {
        let valid = [
            (key: "select", value: #"*,a:b!c!inner(d->e->>0::text,"q\"x",f(*)),g"#),
            (key: "or", value: #"(a.eq."x,y",not.and(b.in.(1,"2)"),c.cs.{1,2}),d.is.null)"#),
            (key: "order", value: "a->b.desc.nullsfirst,c.asc"), (key: "x", value: #"not.in.("a,b",c)"#), (key: "columns", value: #""a",b"#),
        ]
        for pair in valid {
            #expect((try? QueryGrammar.parse([pair])) != nil, "\(pair)")
            for end in pair.value.indices {
                _ = try? QueryGrammar.parse([(key: pair.key, value: String(pair.value[..<end]))])
            }
        }
    }

    // MARK: Generated valid trees

    static let leafOperators: [FilterOperator] = [
        .eq, .neq, .gt, .gte, .lt, .lte, .like, .ilike, .match, .imatch, .isdistinct, .in, .is, .cs, .ov, .fts, .wfts,
    ]
    static let reservedText = Array(#"a.b,(c)"d\e:f{g}*h é"#)

    static func quoted(_ text: String) -> String {
        "\"" + text.map { $0 == "\\" || $0 == "\"" ? "\\\($0)" : String($0) }.joined() + "\""
    }

    static func randomValue(_ generator: inout SeededGenerator) -> String {
        String((0..<Int.random(in: 0...8, using: &generator)).map { _ in Self.reservedText.randomElement(using: &generator) ?? "a" })
    }

    /// A random tree and its text, as a client would write it.
    static func randomTree(_ generator: inout SeededGenerator, depth: Int) -> (LogicTree, String) {
        if depth >= 4 || Int.random(in: 0..<3, using: &generator) == 0 {
            let column = ["age", "name", "tags", "data"].randomElement(using: &generator) ?? "age"
            let negated = Bool.random(using: &generator)
            let prefix = "\(column).\(negated ? "not." : "")"
            let op = Self.leafOperators.randomElement(using: &generator) ?? .eq
            let condition: Condition
            let text: String
            switch op {
            case .in:
                let items = (0..<Int.random(in: 1...4, using: &generator)).map { _ in Self.randomValue(&generator) }
                condition = Condition(negated: negated, op: .in, value: .list(items == [""] ? [] : items))
                text = "in.(" + items.map(Self.quoted).joined(separator: ",") + ")"
            case .is:
                let keyword = [IsValue.null, .true, .false, .unknown].randomElement(using: &generator) ?? .null
                condition = Condition(negated: negated, op: .is, value: .keyword(keyword))
                text = "is." + keyword.rawValue.uppercased()
            case .cs, .ov:
                let literal = "{" + (0..<Int.random(in: 0...3, using: &generator)).map { _ in "x,\"y\"" }.joined(separator: ",") + "}"
                condition = Condition(negated: negated, op: op, value: .text(literal))
                text = "\(op.rawValue).\(literal)"
            case .fts, .wfts:
                let value = Self.randomValue(&generator)
                condition = Condition(negated: negated, op: op, language: "english", value: .text(value))
                text = "\(op.rawValue)(english).\(Self.quoted(value))"
            default:
                let value = Self.randomValue(&generator)
                if op.takesQuantifier && Bool.random(using: &generator) {
                    condition = Condition(negated: negated, op: op, quantifier: .any, value: .text("{1,2}"))
                    text = "\(op.rawValue)(any).{1,2}"
                } else {
                    condition = Condition(negated: negated, op: op, value: .text(value))
                    text = "\(op.rawValue).\(Self.quoted(value))"
                }
            }
            return (.filter(Filter(field: field(column), condition: condition)), prefix + text)
        }
        let (group, text) = Self.randomGroup(&generator, depth: depth + 1)
        return (.group(group), text)
    }

    static func randomGroup(_ generator: inout SeededGenerator, depth: Int) -> (LogicGroup, String) {
        let op: LogicGroup.Operator = Bool.random(using: &generator) ? .and : .or
        let negated = Bool.random(using: &generator)
        let children = (0..<Int.random(in: 1...4, using: &generator)).map { _ in Self.randomTree(&generator, depth: depth) }
        let text = (negated ? "not." : "") + op.rawValue + "(" + children.map(\.1).joined(separator: ",") + ")"
        return (LogicGroup(op: op, negated: negated, children: children.map(\.0)), text)
    }

    @Test func generatedTreesParseToWhatGeneratedThem() throws {
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<2_000 {
            let (group, text) = Self.randomGroup(&generator, depth: 1)
            // The key carries the top operator (`not.or`), the value the parenthesised children.
            guard let open = text.firstIndex(of: "(") else { continue }
            let key = String(text[..<open])
            let value = String(text[open...])
            let query = try QueryGrammar.parse([(key: "rel." + key, value: value)])
            #expect(query.embedded[["rel"]]?.logic == [group], "\(key)=\(value)")
        }
    }

    // MARK: Sizes and depths

    @Test func tenThousandItemInList() throws {
        let items = (0..<10_000).map { $0.isMultiple(of: 2) ? "\($0)" : "\"v,\($0)\"" }
        let query = try QueryGrammar.parse([(key: "id", value: "in.(" + items.joined(separator: ",") + ")")])
        guard case .list(let values) = query.root.filters.first?.condition.value else {
            Issue.record("not a list")
            return
        }
        #expect(values.count == 10_000)
        #expect(values[1] == "v,1" && values[9_998] == "9998")
        let tree = try QueryGrammar.parse([(key: "or", value: "(id.in.(" + items.joined(separator: ",") + "),a.eq.1)")])
        #expect(tree.root.logic.first?.children.count == 2)
    }

    @Test func thousandDeepTreesAreRefusedCleanly() {
        let deepOr = "(" + String(repeating: "or(", count: 999) + "a.eq.1" + String(repeating: ")", count: 1_000)
        #expect(grammarError([("or", deepOr)])?.details == "logic tree nested deeper than 32 levels")
        let deepNot = "(" + String(repeating: "not.and(", count: 999) + "a.eq.1" + String(repeating: ")", count: 1_000)
        #expect(grammarError([("or", deepNot)])?.code == "PGRST100")
        let deepSelect = String(repeating: "r(", count: 1_000) + "*" + String(repeating: ")", count: 1_000)
        #expect(grammarError([("select", deepSelect)])?.code == "PGRST100")
    }

    @Test func hugeNumbersAreErrorsNotTraps() {
        #expect(grammarError([("limit", "99999999999999999999")])?.code == "PGRST100")
        #expect(grammarError([("offset", "-99999999999999999999")])?.code == "PGRST100")
        #expect(grammarError([("select", "data->99999999999999999999")])?.details == "JSON array index out of range")
        #expect(grammarError([("order", "data->-99999999999999999999.desc")])?.code == "PGRST100")
    }
}
