import Testing

@testable import PostgRESTGrammar

/// The raw query string, the `Range` header and the `Prefer` header.
@Suite struct QueryStringAndHeaderTests {
    static func pairs(_ raw: String) throws -> [String] { try QueryGrammar.pairs(rawQuery: raw).map { "\($0.key)=\($0.value)" } }

    @Test func pairsDecodeInOrder() throws {
        #expect(try Self.pairs("a=1&b=x+y%2C%28%29&a=2") == ["a=1", "b=x y,()", "a=2"])
        #expect(
            try Self.pairs("?k=v=w&&x&=e&y=;z=%C3%A9") == ["k=v=w", "=e", "y=", "z=é"],
            "empty pieces and pieces without `=` are skipped, `;` separates")
        #expect(try Self.pairs("na%6De=eq.%7B%22a%22%7D") == [#"name=eq.{"a"}"#])
        #expect(try Self.pairs("") == [])
    }

    @Test func canonicalQuerySortsByKeyJoinsRepeatsAndEncodes() throws {
        #expect(QueryGrammar.canonical(try QueryGrammar.pairs(rawQuery: "b=eq.1&a=eq.1")) == "a=eq.1&b=eq.1")
        #expect(QueryGrammar.canonical(try QueryGrammar.pairs(rawQuery: "c=3&a=2&c=1&a=1")) == "a=2,1&c=3,1", "stable, as Haskell's sortOn")
        #expect(
            QueryGrammar.canonical(try QueryGrammar.pairs(rawQuery: "select=id,name&name=in.(%22a%20b%22)&x=%C3%A9"))
                == "name=in.%28%22a%20b%22%29&select=id%2Cname&x=%C3%A9")
        #expect(QueryGrammar.canonical([]) == "")
    }

    /// A `%` that starts no escape is kept, as http-types' `urlDecode` keeps it (PostgREST's QuerySpec sends
    /// `like(any).{%plan%,%brain%}` unencoded).
    @Test func aPercentThatStartsNoEscapeIsKept() throws {
        #expect(try Self.pairs("a=%&b=%4&c=%zz&d%G1=1&e=%25%2") == ["a=%", "b=%4", "c=%zz", "d%G1=1", "e=%%2"])
        #expect(try Self.pairs("body=like(any).{%plan%,%brain%}") == ["body=like(any).{%plan%,%brain%}"], "%br: b is hex, r is not")
        #expect(try Self.pairs("x=%4a%C3%A9") == ["x=Jé"], "two hexadecimal digits are an escape")
    }

    @Test(arguments: ["a=%FF", "a=%C3", "a=%ED%A0%80", "a=%00", "%00=1", "a=%ba"])
    func invalidUTF8AndNULAreRefused(_ raw: String) {
        #expect(throws: QueryGrammarError.self, "\(raw)") { try QueryGrammar.pairs(rawQuery: raw) }
        #expect((try? QueryGrammar.pairs(rawQuery: raw)) == nil)
    }

    @Test func rangeHeader() {
        #expect(QueryGrammar.range(header: "0-19").map { [$0.offset, $0.limit ?? -99] } == [0, 20])
        #expect(QueryGrammar.range(header: "5-").map { [$0.offset, $0.limit ?? -99] } == [5, -99])
        #expect(QueryGrammar.range(header: "5-2").map { [$0.offset, $0.limit ?? -99] } == [5, -2], "PostgREST answers 416 for lower > upper")
        for refused in ["items=0-19", "-5", "a-b", "1-2-3", "", "0 -1", "+1-2", "99999999999999999999-", "0-99999999999999999999", "١-٢"] {
            #expect(QueryGrammar.range(header: refused) == nil, "\(refused)")
        }
    }

    @Test func preferencesAsSupabaseClientsSendThem() {
        // Swift and Python join with ",", JS with ", ".
        var expected = Preferences()
        expected.returnPreference = .representation
        expected.count = .exact
        #expect(Preferences.parse(headers: ["return=representation,count=exact"]) == expected)
        #expect(Preferences.parse(headers: ["count=exact, return=representation"]) == expected)
    }

    @Test func firstRecognisedValueWinsAcrossHeadersAndTheRestIsInvalid() {
        let preferences = Preferences.parse(headers: [
            "count=bogus, count=planned,resolution=ignore-duplicates", " missing=null ,\thandling=strict, foo, count=exact",
            "max-affected=5,max-affected=7,timezone=America/Los_Angeles,tx=rollback,return=headers-only,resolution=merge-duplicates,",
        ])
        #expect(preferences.count == .planned)
        #expect(preferences.resolution == .ignoreDuplicates)
        #expect(preferences.missing == .null)
        #expect(preferences.handling == .strict)
        #expect(preferences.maxAffected == 5)
        #expect(preferences.timezone == "America/Los_Angeles")
        #expect(preferences.transaction == .rollback)
        #expect(preferences.returnPreference == .headersOnly)
        #expect(preferences.invalid == ["count=bogus", "foo", ""])
    }

    @Test func maxAffectedMustBeANonNegativeInteger() {
        #expect(Preferences.parse(headers: ["max-affected=-1"]).maxAffected == nil)
        #expect(Preferences.parse(headers: ["max-affected=abc,max-affected=3"]).maxAffected == nil, "only the first is read, as PostgREST")
        #expect(Preferences.parse(headers: ["max-affected=99999999999999999999"]).maxAffected == nil)
        #expect(Preferences.parse(headers: ["max-affected=0"]).maxAffected == 0)
        #expect(Preferences.parse(headers: []) == Preferences())
        #expect(Preferences.parse(headers: [""]) == Preferences())
    }
}
