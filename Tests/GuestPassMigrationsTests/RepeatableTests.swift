import Foundation
import GuestPassMigrations
import GuestPassPostgres
import GuestPassTestSupport
import Testing

/// One versioned file (a table) and two repeatable files (a function over it, and a view of it).
private let tableAndDefinitions: KeyValuePairs<String, String> = [
    "0001_create_things.sql": "create table things (id int primary key);\ninsert into things values (1), (2);\n",
    "repeatable/a_functions.sql":
        "create or replace function thing_count() returns bigint language sql stable as $$ select count(*) from things $$;\n",
    "repeatable/b_views.sql": "create or replace view thing_ids as select id from things;\n",
]

private func functionBody(_ pool: PostgresPool, _ name: String) async throws -> String? {
    let rows = try await pool.execute("select prosrc from pg_proc where proname = $1", [name]).rows
    return try rows.first?.decode(String.self, at: 0)
}

@Suite("Repeatable files (repeatable/<name>.sql)")
struct RepeatableTests {
    @Test("a repeatable file is applied once, after the versioned files; a second run applies nothing")
    func appliedOnceAfterVersioned() async throws {
        let folder = try MigrationFolder(tableAndDefinitions)
        try await withRunner { (runner, pool) async throws in
            let set = try folder.loadSet()
            #expect(set.versioned.map(\.version) == ["0001"])
            #expect(set.repeatable.map(\.name) == ["a_functions", "b_views"])
            #expect(set.repeatable.allSatisfy { $0.kind == .repeatable && $0.version == "R" })

            let first = try await runner.up(core: MigrationSet(versioned: []), app: set)
            // The versioned file first (the repeatable ones depend on its table), then the repeatable ones by name.
            #expect(first.applied.map(\.fileName) == ["0001_create_things.sql", "repeatable/a_functions.sql", "repeatable/b_views.sql"])
            #expect(try await count(pool, "select thing_count()") == 2)
            #expect(try await count(pool, "select count(*) from thing_ids") == 2)
            let rows = try await repeatableRows(pool)
            #expect(rows.map(\.name) == ["a_functions", "b_views"])
            #expect(rows.allSatisfy { $0.scope == "app" && $0.success && $0.appliedCount == 1 })
            #expect(rows.map(\.checksum) == set.repeatable.map(\.checksum))
            // Repeatable files have their own table: the versioned history holds the versioned file only.
            #expect(try await historyRows(pool).map(\.version) == ["0001"])

            let second = try await runner.up(folder)
            #expect(second.applied.isEmpty)
            #expect(try await repeatableRows(pool).map(\.appliedCount) == [1, 1])
        }
    }

    @Test("a changed repeatable file is applied again, and only that one")
    func reappliedWhenChanged() async throws {
        try await withApplied(tableAndDefinitions) { (runner, pool, folder) async throws in

            try folder.write(
                "repeatable/a_functions.sql",
                "create or replace function thing_count() returns bigint language sql stable as $$ select count(*) * 10 from things $$;\n")
            let status = try await runner.status(folder)
            #expect(
                status.map { "\($0.kind.rawValue)/\($0.name)/\($0.state.rawValue)" }
                    == ["versioned/create_things/applied", "repeatable/a_functions/changed", "repeatable/b_views/applied"])
            #expect(!status.contains { $0.needsAttention }, "a changed repeatable file is not an error: up applies it")

            let again = try await runner.up(folder)
            #expect(again.applied.map(\.fileName) == ["repeatable/a_functions.sql"])
            #expect(try await count(pool, "select thing_count()") == 20)
            let rows = try await repeatableRows(pool)
            #expect(rows.map(\.appliedCount) == [2, 1])
            #expect(rows.map(\.checksum) == (try folder.loadSet()).repeatable.map(\.checksum))

            // CRLF line endings are not a change.
            let text = try String(decoding: folder.bytes("repeatable/b_views.sql"), as: UTF8.self)
            try folder.write("repeatable/b_views.sql", text.replacingOccurrences(of: "\n", with: "\r\n"))
            #expect(try await runner.up(folder).applied.isEmpty)
        }
    }

    @Test("the core's repeatable files run before the app's versioned files, which may use them")
    func coreBeforeApp() async throws {
        let core = try MigrationFolder([
            "0001_create_base.sql": "create table base (id int primary key);\n",
            "repeatable/functions.sql": "create or replace function base_default() returns int language sql as $$ select 7 $$;\n",
        ])
        let app = try MigrationFolder()
        // A column default that calls a core function: only possible once the core's repeatable files ran.
        try app.write("0001_create_items.sql", "create table items (id int primary key, n int not null default base_default());\n")
        try app.write(
            "repeatable/functions.sql", "create or replace function item_count() returns bigint language sql as $$ select count(*) from items $$;\n")
        try await withRunner { (runner, pool) async throws in
            let outcome = try await runner.up(core: try core.loadSet(.core), app: try app.loadSet(.app))
            #expect(
                outcome.applied.map { "\($0.scope.rawValue)/\($0.fileName)" }
                    == ["core/0001_create_base.sql", "core/repeatable/functions.sql", "app/0001_create_items.sql", "app/repeatable/functions.sql"])
            // The same name in both scopes is two records.
            #expect(try await repeatableRows(pool).map { "\($0.scope)/\($0.name)" } == ["app/functions", "core/functions"])
        }
    }

    @Test("a failing repeatable file leaves no trace, names the file, and stops the run")
    func failingLeavesNoTrace() async throws {
        try await withApplied(tableAndDefinitions) { (runner, pool, folder) async throws in
            let recorded = try await repeatableRows(pool)

            // The new function is created, then the file fails: neither it nor the new body of thing_count stays.
            try folder.write(
                "repeatable/a_functions.sql",
                """
                create or replace function thing_count() returns bigint language sql stable as $$ select -1::bigint $$;
                create or replace function new_helper() returns int language sql as $$ select 1 $$;
                select * from no_such_table;

                """)
            try folder.write("repeatable/b_views.sql", "create or replace view thing_ids as select id, id * 2 as twice from things;\n")
            expect(await runner.refusal(folder), mentions: "repeatable/a_functions.sql", "42P01")
            #expect(try await functionBody(pool, "new_helper") == nil)
            #expect(try await count(pool, "select thing_count()") == 2, "the old body stays")
            #expect(try await repeatableRows(pool) == recorded, "the old checksum stays recorded")
            // The run stopped: the file after it was not applied either.
            #expect(try await count(pool, "select count(*) from information_schema.columns where table_name = 'thing_ids'") == 1)

            let status = try await runner.status(folder)
            #expect(status.filter { $0.kind == .repeatable }.map(\.state) == [.changed, .changed])
        }
    }

    @Test("a repeatable file that commits on its own is refused and leaves no record")
    func ownCommitRefused() async throws {
        let folder = try MigrationFolder()
        try folder.write("repeatable/sneaky.sql", "create table sneaky (id int);\ncommit;\n")
        try await withRunner { (runner, pool) async throws in
            expect(await runner.refusal(folder), mentions: "sneaky.sql")
            #expect(!(try await tableExists(pool, "sneaky")))
            #expect(try await repeatableRows(pool).isEmpty)
        }
    }

    @Test("four runners started together apply a repeatable file exactly once")
    func concurrentRunners() async throws {
        let folder = try MigrationFolder([
            "0001_create_counter.sql": "create table counter (n int not null);\n",
            "repeatable/count.sql": "insert into counter values (1);\nselect pg_sleep(0.5);\n",
        ])
        try await withEmptyDatabase { (database, pool) async throws in
            let applied = try await upConcurrently(4, on: database, folder)
            #expect(applied.filter { $0 == ["0001_create_counter.sql", "repeatable/count.sql"] }.count == 1, "\(applied)")
            #expect(applied.filter(\.isEmpty).count == 3, "\(applied)")
            #expect(try await count(pool, "select count(*) from counter") == 1)
            #expect(try await repeatableRows(pool).map(\.appliedCount) == [1])
        }
    }

    @Test("status lists repeatable files as pending, applied, changed and removed; up forgets a removed one")
    func statusStates() async throws {
        let folder = try MigrationFolder(tableAndDefinitions)
        try await withRunner { (runner, pool) async throws in
            let none = MigrationSet(versioned: [])
            let before = try await runner.status(core: none, app: try folder.loadSet())
            #expect(before.map(\.state) == [.pending, .pending, .pending])
            #expect(before.filter { $0.kind == .repeatable }.allSatisfy { $0.version == "R" && $0.appliedAt == nil })

            _ = try await runner.up(core: none, app: try folder.loadSet())
            let after = try await runner.status(core: none, app: try folder.loadSet())
            #expect(after.map(\.state) == [.applied, .applied, .applied])
            #expect(after.allSatisfy { $0.appliedAt != nil })

            try folder.remove("repeatable/b_views.sql")
            try folder.write("repeatable/c_more.sql", "create or replace view more_ids as select id from things;\n")
            let changed = try await runner.status(core: none, app: try folder.loadSet())
            #expect(
                changed.map { "\($0.name)/\($0.state.rawValue)" } == [
                    "create_things/applied", "a_functions/applied", "c_more/pending", "b_views/removed",
                ])
            #expect(!changed.contains { $0.needsAttention })
            // Without --dir, the app's records are only listed.
            #expect(try await runner.status(core: none, app: nil).map(\.state) == [.recorded, .recorded, .recorded])

            let up = try await runner.up(core: none, app: try folder.loadSet())
            #expect(up.applied.map(\.fileName) == ["repeatable/c_more.sql"])
            #expect(try await repeatableRows(pool).map(\.name) == ["a_functions", "c_more"])
            #expect(try await tableExists(pool, "thing_ids"), "a removed file's objects stay")
        }
    }

    @Test("a database migrated before the re-baseline is refused with the way out")
    func preBaselineHistoryRefused() async throws {
        try await withRunner { (runner, pool) async throws in
            _ = try await runner.up(core: [], app: nil)
            _ = try await pool.execute(
                """
                insert into guestpass_migrations.history (scope, version, name, checksum, transactional, success)
                values ('core', '0001', 'create_roles', 'sha256:00', true, true)
                """)
            let error = await #expect(throws: MigrationError.self) {
                _ = try await runner.up(core: try MigrationSet.core(), app: nil)
            }
            let message = error?.description ?? ""
            #expect(message.contains("re-baseline") && message.contains("guestpass dev down"), "\(message)")
        }
    }

    @Test("repeatable files load in file-name order; a folder without repeatable/ has none")
    func loading() throws {
        let folder = try MigrationFolder([
            "0001_a.sql": "select 1;\n",
            "repeatable/20_b.sql": "select 2;\n",
            "repeatable/10_a.sql": "select 3;\n",
            "repeatable/notes.md": "not sql\n",
        ])
        let set = try folder.loadSet()
        #expect(set.versioned.map(\.name) == ["a"])
        #expect(set.repeatable.map(\.name) == ["10_a", "20_b"])
        #expect(set.repeatable.map(\.fileName) == ["repeatable/10_a.sql", "repeatable/20_b.sql"])
        #expect(try folder.load().map(\.name) == ["a"], "MigrationFile.load reads the versioned files only")

        let plain = try MigrationFolder()
        try plain.write("0001_a.sql", "select 1;\n")
        #expect(try plain.loadSet().repeatable.isEmpty)
    }
}
