import Testing

@testable import PostgRESTGrammar

/// `or=`/`and=` trees, `order=`, `limit`/`offset`, `columns=`, `on_conflict=`.
@Suite struct LogicAndOrderTests {
    @Test func orAndNotAndNesting() throws {
        let query = try parsePairs([
            ("or", "(a.eq.1,b.gt.2)"), ("and", "(c.lt.3)"), ("not.or", "(d.is.null,e.neq.x)"), ("or", "(age.eq.14,not.and(age.gte.11,age.lte.17))"),
        ])
        #expect(
            query.root.logic == [
                LogicGroup(op: .or, children: [leaf("a", .eq, "1"), leaf("b", .gt, "2")]),
                LogicGroup(op: .and, children: [leaf("c", .lt, "3")]),
                LogicGroup(
                    op: .or, negated: true,
                    children: [.filter(Filter(field: field("d"), condition: Condition(op: .is, value: .keyword(.null)))), leaf("e", .neq, "x")]),
                LogicGroup(
                    op: .or,
                    children: [
                        leaf("age", .eq, "14"),
                        .group(LogicGroup(op: .and, negated: true, children: [leaf("age", .gte, "11"), leaf("age", .lte, "17")])),
                    ]),
            ])
        #expect(query.root.filters.isEmpty)
    }

    @Test func embeddedTreeFromTheSwiftSnapshot() throws {
        // Snapshot test-or-filter-with-referenced-table.
        let query = try parseQuery("messages.or=(public.eq.true,recipient_id.eq.1)&select=*,messages(*)")
        #expect(query.root.isEmpty)
        #expect(
            query.embedded[["messages"]]?.logic == [LogicGroup(op: .or, children: [leaf("public", .eq, "true"), leaf("recipient_id", .eq, "1")])])
        #expect(
            try parsePairs([("messages.not.and", "(a.eq.1)")]).embedded[["messages"]]?.logic == [
                LogicGroup(op: .and, negated: true, children: [leaf("a", .eq, "1")])
            ])
    }

    @Test func leafValuesEndAtCommaOrParenthesisUnlessQuotedOrAnArrayOrAList() throws {
        let query = try parsePairs([
            ("or", #"(name.eq."a,b)\"c",tags.cs.{1,2},id.in.(1,"2,3"),note.like.*x*,data->>k.not.ilike(any).{a,b},t.fts(english).cat)"#)
        ])
        #expect(
            query.root.logic == [
                LogicGroup(
                    op: .or,
                    children: [
                        leaf("name", .eq, #"a,b)"c"#), leaf("tags", .cs, "{1,2}"),
                        .filter(Filter(field: field("id"), condition: Condition(op: .in, value: .list(["1", "2,3"])))), leaf("note", .like, "*x*"),
                        .filter(
                            Filter(
                                field: field("data", [JSONPathStep(arrow: .text, key: .name("k"))]),
                                condition: Condition(negated: true, op: .ilike, quantifier: .any, value: .text("{a,b}")))),
                        .filter(Filter(field: field("t"), condition: Condition(op: .fts, language: "english", value: .text("cat")))),
                    ])
            ])
    }

    @Test func aTreeThatReadsAsOneFilterIsAFilterAsInPostgREST() throws {
        #expect(try parsePairs([("or", ".eq.1")]).root.filters == [filter("or", .eq, "1")])
    }

    @Test func treesNestUpToTheBoundAndDeeperOnesAreRefused() throws {
        func nested(_ depth: Int) -> String { "(" + String(repeating: "or(", count: depth - 1) + "a.eq.1" + String(repeating: ")", count: depth) }
        #expect(try parsePairs([("or", nested(32))]).root.logic.count == 1)
        let refused = grammarError([("or", nested(33))])
        #expect(refused?.code == "PGRST100")
        #expect(refused?.details == "logic tree nested deeper than 32 levels")
        #expect(grammarError([("or", nested(1_000))])?.code == "PGRST100")
        #expect(grammarError([("or", String(repeating: "(not.and", count: 50_000))])?.code == "PGRST100")
    }

    @Test func orderTermsDirectionsAndNulls() throws {
        // Snapshot query-with-timestamptz: `order=received_at.asc.nullslast`.
        #expect(
            try parseQuery("order=received_at.asc.nullslast&received_at=gt.2023-03-23T15:50:30.511743+00:00").root.order == [
                OrderTerm(field: field("received_at"), direction: .asc, nulls: .last)
            ])
        #expect(
            try parsePairs([("order", "a.asc.nullslast,other.desc,data->>k,x.nullsfirst, y .desc")]).root.order == [
                OrderTerm(field: field("a"), direction: .asc, nulls: .last), OrderTerm(field: field("other"), direction: .desc),
                OrderTerm(field: field("data", [JSONPathStep(arrow: .text, key: .name("k"))])), OrderTerm(field: field("x"), nulls: .first),
                OrderTerm(field: field("y"), direction: .desc),
            ])
        let query = try parsePairs([("order", "a"), ("messages.order", "sent.desc"), ("order", "b.desc")])
        #expect(query.root.order == [OrderTerm(field: field("a"))], "the first order counts, as PostgREST looks it up")
        #expect(query.embedded[["messages"]]?.order == [OrderTerm(field: field("sent"), direction: .desc)])
    }

    /// PostgREST's `pOrderRelationTerm`: `rel(col)`, tried before a plain term, with a direction and nulls of its own.
    @Test func relatedOrderTerms() throws {
        #expect(
            try parsePairs([("order", "directors(last_name).desc.nullslast,title,readings(content->>n)")]).root.order == [
                OrderTerm(field: field("last_name"), direction: .desc, nulls: .last, relation: "directors"),
                OrderTerm(field: field("title")),
                OrderTerm(field: field("content", [JSONPathStep(arrow: .text, key: .name("n"))]), relation: "readings"),
            ])
        for refused in ["rel(col", "rel()", "rel(col).sideways", "rel(a)(b)"] {
            #expect(grammarError([("order", refused)])?.code == "PGRST100", "\(refused)")
        }
    }

    @Test func limitAndOffset() throws {
        let query = try parsePairs([("limit", "10"), ("offset", "20"), ("messages.limit", "0"), ("messages.offset", "-3"), ("limit", "5")])
        #expect(query.root.limit == 5 && query.root.offset == 20)
        #expect(query.embedded[["messages"]]?.limit == 0 && query.embedded[["messages"]]?.offset == nil)
        #expect(try parsePairs([("offset", "-5")]).root.offset == nil, "a negative offset is ignored")
        let negative = grammarError([("limit", "-1")])
        #expect(
            negative
                == QueryGrammarError(
                    code: "PGRST103", message: "Requested range not satisfiable", details: "Limit should be greater than or equal to zero."))
        for refused in ["abc", "", "1.5", "99999999999999999999", "0x10", "1e3"] {
            #expect(grammarError([("limit", refused)])?.code == "PGRST100", "\(refused)")
            #expect(grammarError([("offset", refused)])?.code == "PGRST100", "\(refused)")
        }
        #expect(grammarError([("limit", "abc")])?.message == #""failed to parse limit parameter (abc)" (line 1, column 1)"#)
    }

    @Test func columnsAndOnConflict() throws {
        // Snapshot bulk-upsert: `columns=%22email%22,%22username%22`.
        #expect(try parseQuery("columns=%22email%22,%22username%22").columns == ["email", "username"])
        let query = try parsePairs([("columns", "a, b ,c"), ("on_conflict", "x,y"), ("on_conflict", "id")])
        #expect(query.columns == ["a", "b", "c"])
        #expect(query.onConflict == ["x", "y"], "the first on_conflict counts, as PostgREST looks it up")
        #expect(try parseQuery("id=eq.1").columns == nil)
    }
}
