import Foundation
import Testing

@testable import GuestPassStore

/// The foreign keys views take over from their base tables (`RelationCatalog.viewForeignKeys`), from the dependencies
/// the catalog query reads (`ViewKeyDependency`). PostgREST's own view cases run end to end in
/// `e2e/test_postgrest_spec.py`; these pin the expansion itself.
@Suite struct ViewForeignKeyTests {
    /// `private.books.author_id → private.authors.id`, one to many.
    static let base = ForeignKey(
        name: "books_author_id_fkey", schema: "private", table: "books", columns: ["author_id"], referencedSchema: "private",
        referencedTable: "authors", referencedColumns: ["id"], oneToOne: false)

    static func dependencies(_ json: String) throws -> [ViewKeyDependency] {
        try JSONDecoder().decode([ViewKeyDependency].self, from: Data(json.utf8))
    }

    static func describe(_ keys: [ForeignKey]) -> [String] {
        keys.map {
            "\($0.schema).\($0.table)(\($0.columns.joined(separator: ","))) → \($0.referencedSchema).\($0.referencedTable)(\($0.referencedColumns.joined(separator: ",")))"
        }.sorted()
    }

    @Test func aViewShowingEitherEndHoldsTheKeyUnderItsColumnNames() throws {
        let dependencies = try Self.dependencies(
            """
            [{"view_schema": "test", "view": "books", "kind": "f", "constraint": "books_author_id_fkey",
              "table_schema": "private", "table": "books", "columns": [["author_id", ["writer"]]]},
             {"view_schema": "test", "view": "authors", "kind": "f_ref", "constraint": "books_author_id_fkey",
              "table_schema": "private", "table": "authors", "columns": [["id", ["author_no"]]]},
             {"view_schema": "test", "view": "authors", "kind": "p", "constraint": "authors_pkey",
              "table_schema": "private", "table": "authors", "columns": [["id", ["author_no"]]]}]
            """)
        let keys = RelationCatalog.viewForeignKeys(dependencies, baseKeys: [Self.base])
        #expect(
            Self.describe(keys) == [
                "private.books(author_id) → test.authors(author_no)",
                "test.books(writer) → private.authors(id)",
                "test.books(writer) → test.authors(author_no)",
            ])
        #expect(keys.allSatisfy { $0.name == Self.base.name && !$0.oneToOne }, "the base key's name and cardinality")
    }

    @Test func aKeyColumnShownTwiceGivesAKeyForEachColumn() throws {
        let dependencies = try Self.dependencies(
            """
            [{"view_schema": "test", "view": "books", "kind": "f", "constraint": "books_author_id_fkey",
              "table_schema": "private", "table": "books", "columns": [["author_id", ["author_id", "writer"]]]}]
            """)
        let keys = RelationCatalog.viewForeignKeys(dependencies, baseKeys: [Self.base])
        #expect(Self.describe(keys) == ["test.books(author_id) → private.authors(id)", "test.books(writer) → private.authors(id)"])
    }

    @Test func aCompositeKeyKeepsItsColumnOrderAndOneToOne() throws {
        let base = ForeignKey(
            name: "contract_player_fkey", schema: "test", table: "contract", columns: ["tournament", "player_id"],
            referencedSchema: "test", referencedTable: "player", referencedColumns: ["tournament", "id"], oneToOne: true)
        let dependencies = try Self.dependencies(
            """
            [{"view_schema": "test", "view": "player_view", "kind": "f_ref", "constraint": "contract_player_fkey",
              "table_schema": "test", "table": "player", "columns": [["tournament", ["t"]], ["id", ["player"]]]},
             {"view_schema": "test", "view": "other", "kind": "f_ref", "constraint": "another_key",
              "table_schema": "test", "table": "player", "columns": [["id", ["id"]]]}]
            """)
        let keys = RelationCatalog.viewForeignKeys(dependencies, baseKeys: [base])
        #expect(Self.describe(keys) == ["test.contract(tournament,player_id) → test.player_view(t,player)"])
        #expect(keys.first?.oneToOne == true)
    }
}
