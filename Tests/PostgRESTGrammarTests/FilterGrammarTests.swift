import Testing

@testable import PostgRESTGrammar

/// Filters `field=[not.]op.value`, from the requests supabase-swift sends (its BuildURLRequestTests snapshots).
@Suite struct FilterGrammarTests {
    static func condition(_ value: String) throws -> Condition {
        let filters = try parsePairs([("column", value)]).root.filters
        #expect(filters.count == 1)
        return try #require(filters.first).condition
    }

    @Test func everyTextOperatorKeepsItsValueVerbatim() throws {
        for op in FilterOperator.allCases where ![.in, .is].contains(op) {
            #expect(
                try Self.condition("\(op.rawValue).Some value.with, dots (and) \"quotes\"")
                    == Condition(op: op, value: .text("Some value.with, dots (and) \"quotes\"")))
        }
    }

    @Test func snapshotAllFiltersAndCount() throws {
        let raw =
            "column=eq.Some%20value&column=neq.Some%20value&column=gt.Some%20value&column=gte.Some%20value&column=lt.Some%20value&column=lte.Some%20value&column=like.Some%20value&column=ilike.Some%20value&column=match.Some%20value&column=imatch.Some%20value&column=isdistinct.Some%20value&column=cs.Some%20value&column=cd.Some%20value&column=sl.Some%20value&column=sr.Some%20value&column=nxl.Some%20value&column=nxr.Some%20value&column=adj.Some%20value&column=ov.Some%20value&column=fts.Some%20value&column=plfts.Some%20value&column=phfts.Some%20value&column=wfts.Some%20value&select=*"
        let query = try parseQuery(raw)
        #expect(query.root.filters.count == 23, "repeated keys are all kept")
        #expect(query.root.filters.allSatisfy { $0.field == field("column") && $0.condition.value == .text("Some value") })
        // The same snapshot's `in.Some value` and `is.Some value` are refused by PostgREST too.
        #expect(grammarError([("column", "in.Some value")])?.message == #""failed to parse filter (in.Some value)" (line 1, column 4)"#)
        #expect(grammarError([("column", "is.Some value")])?.message == #""failed to parse filter (is.Some value)" (line 1, column 4)"#)
    }

    @Test func plusIsASpaceAsPostgRESTDecodesIt() throws {
        // supabase-swift sends `+` unencoded (snapshot filter-starting-with-non-alphanumeric).
        #expect(try parseQuery("select=*&to=eq.+16505555555").root.filters == [filter("to", .eq, " 16505555555")])
    }

    @Test func isTakesAKeywordInAnyCase() throws {
        #expect(try Self.condition("is.NULL") == Condition(op: .is, value: .keyword(.null)))
        #expect(try Self.condition("is.True") == Condition(op: .is, value: .keyword(.true)))
        #expect(try Self.condition("not.is.false") == Condition(negated: true, op: .is, value: .keyword(.false)))
        #expect(try Self.condition("is.unknown") == Condition(op: .is, value: .keyword(.unknown)))
        #expect(try Self.condition("is.not_null") == Condition(negated: true, op: .is, value: .keyword(.null)))
        #expect(grammarError([("column", "is.nil")])?.details == "unexpected \"i\" expecting isVal: (null, not_null, true, false, unknown)")
    }

    @Test func inListsUnquoteAndUnescape() throws {
        #expect(try Self.condition("in.(1,2,3)") == Condition(op: .in, value: .list(["1", "2", "3"])))
        #expect(try Self.condition(#"in.(a,"b,c",\"x)"#) == Condition(op: .in, value: .list(["a", "b,c", #"\"x"#])))
        #expect(
            try Self.condition(#"not.in.("a\"b","c\\d","(x)",)"#) == Condition(negated: true, op: .in, value: .list([#"a"b"#, #"c\d"#, "(x)", ""])))
        #expect(try Self.condition(#"in.("a"b,c)"#) == Condition(op: .in, value: .list([#""a"b"#, "c"])), "a quote not ending the item is text")
        #expect(try Self.condition("in.()") == Condition(op: .in, value: .list([])))
        #expect(try Self.condition("in.( 1 ,2 )") == Condition(op: .in, value: .list(["1 ", "2 "])), "only the spaces next to the parentheses go")
    }

    @Test func quantifiersAndFullTextConfigurations() throws {
        // Snapshot likeAnyOf: `email=like(any).%7B%25@supabase.io,%25@supabase.com%7D`.
        #expect(
            try parseQuery("email=like(any).%7B%25@supabase.io,%25@supabase.com%7D").root.filters
                == [Filter(field: field("email"), condition: Condition(op: .like, quantifier: .any, value: .text("{%@supabase.io,%@supabase.com}")))])
        #expect(try Self.condition("ilike(all).{a*,*b}") == Condition(op: .ilike, quantifier: .all, value: .text("{a*,*b}")))
        #expect(try Self.condition("not.gte(any).{1,2}") == Condition(negated: true, op: .gte, quantifier: .any, value: .text("{1,2}")))
        #expect(try Self.condition("wfts(english).cat & dog") == Condition(op: .wfts, language: "english", value: .text("cat & dog")))
        #expect(try Self.condition("fts.cat") == Condition(op: .fts, value: .text("cat")))
        for refused in ["neq(any).{1}", "cs(all).{1}", "in(any).(1)", "fts().x", "eq().x", "eq(some).x"] {
            #expect(grammarError([("column", refused)])?.code == "PGRST100", "\(refused)")
        }
    }

    @Test func containsTakesJSONAndRanges() throws {
        // Snapshot test-contains-filter-with-dictionary: `address=cs.%7B%22postcode%22:90210%7D`.
        #expect(try parseQuery("address=cs.%7B%22postcode%22:90210%7D&select=name").root.filters == [filter("address", .cs, #"{"postcode":90210}"#)])
        #expect(try Self.condition("cd.[1,5)") == Condition(op: .cd, value: .text("[1,5)")))
    }

    @Test func filterKeysNameEmbeddingsAndJSONPaths() throws {
        let query = try parsePairs([("data->>a", "eq.1"), ("messages.public", "is.true"), ("age", "gte.18"), ("age", "lte.30"), (#""a.b""#, "eq.x")])
        #expect(
            query.root.filters == [
                Filter(field: field("data", [JSONPathStep(arrow: .text, key: .name("a"))]), condition: Condition(op: .eq, value: .text("1"))),
                filter("age", .gte, "18"), filter("age", .lte, "30"), filter("a.b", .eq, "x"),
            ])
        #expect(
            query.embedded == [
                ["messages"]: {
                    var node = NodeModifiers()
                    node.filters = [Filter(field: field("public"), condition: Condition(op: .is, value: .keyword(.true)))]
                    return node
                }()
            ])
    }

    @Test func apikeyIsNotAFilter() throws {
        #expect(try parseQuery("apikey=secret&id=eq.1").root.filters == [filter("id", .eq, "1")])
    }
}
