import Testing

@testable import RealtimeProtocol

/// `postgres_changes` filter strings: the classic operators, `in` lists with PostgREST's quoting, `not.`, comma-AND,
/// and the refusals with Realtime-like messages.
@Suite struct FilterTests {
    typealias Condition = RealtimeFilter.Condition

    static func conditions(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> [Condition]? {
        do {
            return try RealtimeFilter.parse(text).conditions
        } catch {
            Issue.record("\(text): \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    static func failure(_ text: String) -> RealtimeProtocolError? {
        protocolError { () throws(RealtimeProtocolError) in try RealtimeFilter.parse(text) }
    }

    @Test func eachOperator() {
        for op in RealtimeFilter.Operator.allCases where op != .in {
            #expect(Self.conditions("user_id=\(op.rawValue).6f1c") == [Condition(column: "user_id", op: op, value: .single("6f1c"))])
        }
        #expect(Self.conditions("id=in.(1,2,3)") == [Condition(column: "id", op: .in, value: .list(["1", "2", "3"]))])
    }

    @Test func theValueIsEverythingAfterTheOperatorsDot() {
        #expect(Self.conditions("ts=lt.2026-01-01T00:00:00.5Z") == [Condition(column: "ts", op: .lt, value: .single("2026-01-01T00:00:00.5Z"))])
        #expect(Self.conditions("a=eq.") == [Condition(column: "a", op: .eq, value: .single(""))])
        #expect(Self.conditions("a=eq.b=c.d") == [Condition(column: "a", op: .eq, value: .single("b=c.d"))])
        #expect(Self.conditions("a=eq.not.x") == [Condition(column: "a", op: .eq, value: .single("not.x"))])
        #expect(Self.conditions("a=eq.x\"y") == [Condition(column: "a", op: .eq, value: .single("x\"y"))], "a quote mid-value is text")
        #expect(Self.conditions("a=eq.\"ab\"cd") == [Condition(column: "a", op: .eq, value: .single("\"ab\"cd"))], "verbatim unless fully quoted")
        #expect(Self.conditions("naïve=eq.ünïcode") == [Condition(column: "naïve", op: .eq, value: .single("ünïcode"))])
    }

    @Test func noFilter() {
        for empty in ["", "  ", "\t\n"] { #expect(Self.conditions(empty) == []) }
    }

    @Test func negation() {
        #expect(
            Self.conditions("status=not.in.(draft,archived)") == [
                Condition(column: "status", op: .in, negated: true, value: .list(["draft", "archived"]))
            ])
        #expect(Self.conditions("n=not.eq.0") == [Condition(column: "n", op: .eq, negated: true, value: .single("0"))])
        #expect(Self.failure("n=not.not.eq.0")?.message.contains("unsupported operator \"not\"") == true)
    }

    @Test func commasAnd() {
        #expect(
            Self.conditions("a=gt.0, a=lt.100,b=in.(x,\"y,z\"),c=eq.\"p,q\"")
                == [
                    Condition(column: "a", op: .gt, value: .single("0")), Condition(column: "a", op: .lt, value: .single("100")),
                    Condition(column: "b", op: .in, value: .list(["x", "y,z"])), Condition(column: "c", op: .eq, value: .single("p,q")),
                ])
        #expect(
            Self.failure("a=eq.1,,b=eq.2")?.message
                == #"invalid filter "a=eq.1,,b=eq.2": filter must not contain empty conditions (check for extra commas)"#)
        #expect(Self.failure("a=eq.1,")?.code == .invalidFilter)
    }

    @Test func inListQuoting() {
        #expect(Self.conditions(#"id=in.(a,b,"c,d")"#) == [Condition(column: "id", op: .in, value: .list(["a", "b", "c,d"]))])
        #expect(
            Self.conditions(#"t=in.("a\"b","c\\d","(e)",  f g , "",")")"#)
                == [Condition(column: "t", op: .in, value: .list(["a\"b", "c\\d", "(e)", "f g", "", ")"]))])
        #expect(Self.conditions("t=in.()") == [Condition(column: "t", op: .in, value: .list([]))])
        #expect(Self.conditions("t=in.( )") == [Condition(column: "t", op: .in, value: .list([]))])
        #expect(Self.failure("t=in.(a,,b)")?.message.contains("empty value") == true)
        #expect(Self.failure("t=in.(a,)")?.message.contains("empty value") == true)
        #expect(Self.failure(#"t=in.("a"b)"#)?.message.contains("only a comma may follow") == true)
        for bare in [#"t=in.(a"b)"#, "t=in.(a(b)", "t=in.((a),b)", "t=in.(a)b)"] {
            #expect(Self.failure(bare)?.message.contains("inside an unquoted `in` value") == true, "\(bare)")
        }
        #expect(Self.failure("t=in.a,b")?.message.contains("wrapped in parentheses") == true)
        #expect(Self.failure("t=in.(a")?.message.contains("wrapped in parentheses") == true)
    }

    @Test func quotedScalarsAsSupabaseSwiftWritesThem() {
        // supabase-swift quotes values holding , ( ) " \ or surrounding spaces, escaping \ and ".
        func escaped(_ raw: String) -> String {
            guard raw.contains(where: { ",()\"\\".contains($0) }) || raw.first == " " || raw.last == " " else { return raw }
            return "\"" + raw.map { $0 == "\\" || $0 == "\"" ? "\\\($0)" : String($0) }.joined() + "\""
        }
        var generator = SeededGenerator(seed: 11)
        let alphabet = Array(#"ab ,()"\.=é"#)
        for _ in 0..<2_000 {
            let values = (0..<Int.random(in: 1...4, using: &generator)).map { _ in
                String((0..<Int.random(in: 1...8, using: &generator)).map { _ in alphabet.randomElement(using: &generator) ?? "a" })
            }
            let text = "a=eq.\(escaped(values[0])),b=in.(\(values.map(escaped).joined(separator: ",")))"
            #expect(
                Self.conditions(text)
                    == [Condition(column: "a", op: .eq, value: .single(values[0])), Condition(column: "b", op: .in, value: .list(values))], "\(text)")
        }
    }

    @Test func hundredInValuesAndNoMore() {
        let hundred = (1...100).map(String.init)
        #expect(Self.conditions("id=in.(\(hundred.joined(separator: ",")))") == [Condition(column: "id", op: .in, value: .list(hundred))])
        let error = Self.failure("id=in.(\((1...101).map(String.init).joined(separator: ",")))")
        #expect(error?.code == .invalidFilter && error?.message.hasSuffix("an `in` list holds at most 100 values") == true)
        let quoted = (1...101).map { "\"v,\($0)\"" }.joined(separator: ",")
        #expect(Self.failure("id=in.(\(quoted))")?.message.contains("at most 100") == true)
    }

    @Test func operatorsAndShapesRefused() {
        #expect(
            Self.failure("title=like.%a%")?.message
                == #"invalid filter "title=like.%a%": unsupported operator "like" (supported: eq, neq, lt, lte, gt, gte, in)"#)
        for op in ["ilike", "is", "match", "imatch", "isdistinct", "EQ", "cs", ""] {
            #expect(Self.failure("a=\(op).1")?.message.contains("unsupported operator") == true, "\(op)")
        }
        #expect(Self.failure("id")?.message == #"invalid filter "id": missing "=" after the column"#)
        #expect(Self.failure("id=eq")?.message.contains(#"expected "<column>=<operator>.<value>""#) == true)
        #expect(Self.failure("=eq.1")?.message.contains("missing the column") == true)
        #expect(Self.failure(#"a=eq."unterminated"#)?.message.hasSuffix("unterminated quoted value") == true)
        #expect(Self.failure(#"a=eq."x\"#)?.message.hasSuffix("unterminated quoted value") == true)
        #expect(Self.failure(#"a=in.("x)"#)?.message.hasSuffix("unterminated quoted value") == true)
    }

    @Test func columnNames() {
        let longest = String(repeating: "c", count: 63)
        #expect(Self.conditions("\(longest)=eq.1")?.first?.column == longest)
        #expect(Self.failure("\(longest)c=eq.1")?.message.contains("longer than 63 bytes") == true)
        #expect(Self.failure(String(repeating: "é", count: 32) + "=eq.1")?.code == .invalidFilter, "64 bytes in 32 characters")
        #expect(Self.conditions("weird col.$:->x=eq.1")?.first?.column == "weird col.$:->x", "quoting happens against the catalog")
        for bad in [#""a"=eq.1"#, "a(b)=eq.1", "a\u{01}=eq.1"] {
            #expect(Self.failure(bad)?.message.contains("must not contain") == true, "\(bad)")
        }
    }

    @Test func boundedConditions() {
        let hundred = (1...100).map { "c\($0)=eq.\($0)" }.joined(separator: ",")
        #expect(Self.conditions(hundred)?.count == 100)
        #expect(Self.failure(hundred + ",x=eq.1")?.message.contains("more than 100 conditions") == true)
        let huge = String(repeating: "x", count: 10_000)
        #expect(Self.failure(huge)?.message.hasPrefix("invalid filter \"" + String(repeating: "x", count: 80) + "…\"") == true, "quotes are bounded")
    }
}
