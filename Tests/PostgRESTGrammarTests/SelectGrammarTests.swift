import Testing

@testable import PostgRESTGrammar

/// `select=`: what a client's column list and embeddings turn into.
@Suite struct SelectGrammarTests {
    static func select(_ text: String) throws -> [SelectItem] { try parsePairs([("select", text)]).select }

    @Test func absentAndEmptySelectAreStar() throws {
        #expect(try parseQuery("id=eq.1").select == [.star])
        #expect(try Self.select("") == [.star])
    }

    @Test func columnsAliasesCastsAndJSONPaths() throws {
        #expect(
            try Self.select("id,full:name,age::text,data->a->>b,d:data->0->>-1::double precision")
                == [
                    .field(SelectField(field: field("id"))),
                    .field(SelectField(field: field("name"), alias: "full")),
                    .field(SelectField(field: field("age"), cast: "text")),
                    .field(
                        SelectField(field: field("data", [JSONPathStep(arrow: .json, key: .name("a")), JSONPathStep(arrow: .text, key: .name("b"))]))),
                    .field(
                        SelectField(
                            field: field("data", [JSONPathStep(arrow: .json, key: .index(0)), JSONPathStep(arrow: .text, key: .index(-1))]),
                            alias: "d",
                            cast: "double precision")),
                ])
    }

    @Test func jsonKeysMayHoldNonReservedPunctuation() throws {
        #expect(
            try Self.select("data->!@#$%^&*_d->>x y") == [
                .field(
                    SelectField(
                        field: field("data", [JSONPathStep(arrow: .json, key: .name("!@#$%^&*_d")), JSONPathStep(arrow: .text, key: .name("x y"))])))
            ])
    }

    @Test func spacesAroundItemsAreSkipped() throws {
        #expect(
            try Self.select("id, name, clients(id, name)")
                == [
                    .field(SelectField(field: field("id"))), .field(SelectField(field: field("name"))),
                    .embed(
                        Embedding(relation: "clients", items: [.field(SelectField(field: field("id"))), .field(SelectField(field: field("name")))])),
                ])
    }

    @Test func quotedNamesCarryReservedCharactersAndEscapes() throws {
        #expect(
            try Self.select(#""a.b,c:d(e)":"x\"y\\z",dashed-name"#)
                == [.field(SelectField(field: field(#"x"y\z"#), alias: "a.b,c:d(e)")), .field(SelectField(field: field("dashed-name")))])
    }

    @Test func embeddingsWithAliasHintAndJoinType() throws {
        #expect(
            try Self.select("*,client(*,nested(*)),owner:users!fk_owner(id),tags!inner(name),m:messages!sender!inner(*),x!left(*),y!inner!h(*)")
                == [
                    .star,
                    .embed(Embedding(relation: "client", items: [.star, .embed(Embedding(relation: "nested", items: [.star]))])),
                    .embed(Embedding(relation: "users", alias: "owner", hint: "fk_owner", items: [.field(SelectField(field: field("id")))])),
                    .embed(Embedding(relation: "tags", isInner: true, items: [.field(SelectField(field: field("name")))])),
                    .embed(Embedding(relation: "messages", alias: "m", hint: "sender", isInner: true, items: [.star])),
                    .embed(Embedding(relation: "x", isInner: false, items: [.star])),
                    .embed(Embedding(relation: "y", hint: "h", isInner: true, items: [.star])),
                ])
    }

    /// PostgREST's `pFieldSelect` doctests and aggregate forms (the table API refuses them; see `TableTests`).
    @Test func aggregatesParseAsInPostgREST() throws {
        #expect(
            try Self.select("count(),n:count()::int,id.sum(),amount::int.avg()::text,data->a.max(),m:x.min(),c.count()")
                == [
                    .field(SelectField(field: field("*"), aggregate: .count)),
                    .field(SelectField(field: field("*"), alias: "n", aggregate: .count, aggregateCast: "int")),
                    .field(SelectField(field: field("id"), aggregate: .sum)),
                    .field(SelectField(field: field("amount"), cast: "int", aggregate: .avg, aggregateCast: "text")),
                    .field(SelectField(field: field("data", [JSONPathStep(arrow: .json, key: .name("a"))]), aggregate: .max)),
                    .field(SelectField(field: field("x"), alias: "m", aggregate: .min)),
                    .field(SelectField(field: field("c"), aggregate: .count)),
                ])
        // `count` is no embedding's name: `count(*)` is not an embedding of a relation called count.
        #expect(grammarError([("select", "count(*)")])?.code == "PGRST100")
    }

    @Test func spreadsWithHintAndJoinTypeBesideEmbeddings() throws {
        #expect(
            try Self.select("*,...client(*),other(*),...films!director_fk!inner(t:title,...specs(runtime)), ...empty()")
                == [
                    .star,
                    .embed(Embedding(relation: "client", isSpread: true, items: [.star])),
                    .embed(Embedding(relation: "other", items: [.star])),
                    .embed(
                        Embedding(
                            relation: "films", hint: "director_fk", isInner: true, isSpread: true,
                            items: [
                                .field(SelectField(field: field("title"), alias: "t")),
                                .embed(Embedding(relation: "specs", isSpread: true, items: [.field(SelectField(field: field("runtime")))])),
                            ])),
                    .embed(Embedding(relation: "empty", isSpread: true, items: [])),
                ])
    }

    /// PostgREST's own doctests of `pSpreadRelationSelect` fail at these columns: a spread takes no alias and no JSON path.
    @Test(arguments: [("alias:...rel(*)", 7), ("...rel->jsonpath(*)", 9), ("...rel", 7), ("....rel(*)", 4)])
    func malformedSpreadsFailWhereTheyDoInPostgREST(_ text: String, _ column: Int) {
        let error = grammarError([("select", text)])
        #expect(error?.code == "PGRST100", "\(text)")
        #expect(
            error?.message.hasPrefix("\"failed to parse select parameter (\(text))\" (line 1, column \(column))") == true,
            "\(text): \(error?.message ?? "")")
    }

    @Test func anIndexInsideAnEmbeddingIsAKeyAsInPostgREST() throws {
        // PostgREST's index must be followed by `->`, `::`, `.`, `,` or the end; before `)` it reads as a key.
        #expect(
            try Self.select("c(data->0)") == [
                .embed(Embedding(relation: "c", items: [.field(SelectField(field: field("data", [JSONPathStep(arrow: .json, key: .name("0"))])))]))
            ])
    }

    @Test(arguments: ["id.sum(", "count()x", "id.total()", "id::text;drop table x", "id::text'", "name!hint", "rel->path(*)", #""unterminated"#])
    func unsupportedOrMalformedItemsAreGrammarErrors(_ text: String) {
        let error = grammarError([("select", text)])
        #expect(error?.code == "PGRST100", "\(text)")
        #expect(error?.message.hasPrefix("\"failed to parse select parameter (\(text))\" (line 1, column ") == true, "\(text)")
    }

    @Test func embeddingsNestUpToTheBoundAndNoFurther() throws {
        let depth = SelectGrammar.maximumDepth
        let accepted = String(repeating: "a(", count: depth) + "*" + String(repeating: ")", count: depth)
        var items = try Self.select(accepted)
        for _ in 0..<depth {
            guard case .embed(let embedding) = items.first else {
                Issue.record("not an embedding")
                return
            }
            items = embedding.items
        }
        #expect(items == [.star])
        let refused = String(repeating: "a(", count: depth + 1) + "*" + String(repeating: ")", count: depth + 1)
        #expect(grammarError([("select", refused)])?.details == "embedding nested deeper than 32 levels")
        let huge = String(repeating: "a(", count: 100_000)
        #expect(grammarError([("select", huge)])?.code == "PGRST100")
    }
}
