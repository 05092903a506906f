import CoreMigrations
import Foundation
import GuestPassMigrations
import GuestPassPostgres
import GuestPassTestSupport
import Testing

/// Three files that each create a table.
private let threeTables: KeyValuePairs<String, String> = [
    "0001_create_t1.sql": "-- first table\ncreate table t1 (id int primary key);\ninsert into t1 values (1);\n",
    "0002_create_t2.sql": "-- second table\ncreate table t2 (id int primary key, t1_id int references t1 (id));\n",
    "0003_create_t3.sql": "-- third table\ncreate table t3 (id int primary key);\n",
]

@Suite("Migration runner against a real database")
struct MigrationRunnerTests {
    // MARK: 1. Apply once

    @Test("applies a folder once; a second run applies nothing")
    func applyOnceThenNothing() async throws {
        let folder = try MigrationFolder(threeTables)
        try await withRunner { (runner, pool) async throws in
            let files = try folder.load()
            let started = Date()

            let first = try await runner.up(core: [], app: files)
            #expect(first.applied.map(\.version) == ["0001", "0002", "0003"])
            for table in ["t1", "t2", "t3"] {
                #expect(try await tableExists(pool, table), "table \(table) should exist after the first run")
            }

            let rows = try await historyRows(pool)
            #expect(rows.count == 3)
            #expect(rows.map(\.version) == ["0001", "0002", "0003"])
            #expect(rows.map(\.name) == ["create_t1", "create_t2", "create_t3"])
            for (row, fileName) in zip(rows, ["0001_create_t1.sql", "0002_create_t2.sql", "0003_create_t3.sql"]) {
                #expect(row.scope == "app")
                #expect(isSHA256Checksum(row.checksum), "checksum \(row.checksum) is not sha256:<64 hex>")
                #expect(row.checksum == (try await serverChecksum(pool, try folder.bytes(fileName))))
                #expect(row.transactional)
                #expect(row.success)
                #expect(row.durationMilliseconds >= 0)
                #expect(row.appliedAt >= started.addingTimeInterval(-5) && row.appliedAt <= Date().addingTimeInterval(5))
            }

            let second = try await runner.up(folder)
            #expect(second.applied.isEmpty)
            #expect(try await historyCount(pool) == 3)
            #expect(try await count(pool, "select count(*) from t1") == 1, "0001 must not have run twice")

            let status = try await runner.status(folder)
            #expect(status.map(\.state) == [.applied, .applied, .applied])
        }
    }

    // MARK: 2. The real core migrations

    @Test("the core migrations apply to an empty database; a second run applies nothing")
    func coreMigrations() async throws {
        try await CoreRoles.ensure()
        let core = try MigrationFile.load(from: CoreMigrations.directory, scope: .core)
        #expect(!core.isEmpty)
        try await withRunner { (runner, pool) async throws in
            let first = try await runner.up(core: core, app: nil)
            #expect(first.applied.map(\.version) == core.map(\.version))
            let rows = try await historyRows(pool)
            #expect(rows.map(\.version) == core.map(\.version))
            #expect(rows.allSatisfy { $0.scope == "core" && $0.success })
            #expect(rows.map(\.checksum) == core.map(\.checksum))
            for table in ["guestpass.apps", "guestpass.api_keys", "public.users", "public.devices"] {
                #expect(try await tableExists(pool, table), "\(table) should exist")
            }

            let second = try await runner.up(core: try MigrationFile.load(from: CoreMigrations.directory, scope: .core), app: nil)
            #expect(second.applied.isEmpty)
            #expect(try await historyCount(pool) == core.count)
        }
    }

    // MARK: 3. Edited and missing files

    @Test("migrate puts Realtime's capture triggers on exactly the tables an app's migrations publish")
    func realtimeSyncAfterMigrations() async throws {
        try await CoreRoles.ensure()
        let core = try MigrationSet.core()
        let app = try MigrationFolder()
        try app.write(
            "0001_create_notes.sql",
            """
            create table public.notes (id int primary key, body text);
            alter table public.notes enable row level security, force row level security;
            alter publication supabase_realtime add table public.notes;

            """
        )
        let captured = """
            select count(*) from pg_trigger
            where tgrelid = 'public.notes'::regclass and tgname like 'guestpass\\_realtime\\_capture%'
            """
        try await withEmptyDatabase { (_, pool) async throws in
            let runner = makeRunner(pool)
            _ = try await runner.up(core: core, app: try app.loadSet(.app))
            #expect(try await count(pool, captured) == 3, "the published table is captured when migrate returns (insert, update, delete)")
            try await pool.execute("insert into public.notes values (1, 'hello')")
            #expect(
                try await count(pool, "select count(*) from guestpass.realtime_changes where table_name = 'notes' and kind = 'INSERT'") == 1
            )

            // A later file takes it out of the publication: the trigger goes with the next run.
            try app.write("0002_unpublish_notes.sql", "alter publication supabase_realtime drop table public.notes;\n")
            _ = try await runner.up(core: core, app: try app.loadSet(.app))
            #expect(try await count(pool, captured) == 0, "a table that left the publication is no longer captured")

            // By hand, then a run with nothing to apply: the sync runs anyway.
            try await pool.execute("alter publication supabase_realtime add table public.notes")
            #expect(try await runner.up(core: core, app: try app.loadSet(.app)).applied.isEmpty)
            #expect(try await count(pool, captured) == 3, "every run leaves the triggers matching the publication")
        }
    }

    @Test("an applied file that was edited is refused, and nothing else is applied")
    func editedFileRefused() async throws {
        try await withApplied(threeTables) { (runner, pool, folder) async throws in
            let recorded = try await historyRows(pool)

            try folder.write("0002_create_t2.sql", "-- second table, edited\ncreate table t2 (id bigint primary key);\n")
            try folder.write("0004_create_t4.sql", "create table t4 (id int);\n")
            expect(await runner.refusal(folder), mentions: "0002_create_t2.sql", "edited")

            #expect(!(try await tableExists(pool, "t4")), "0004 must not be applied when the history is refused")
            #expect(try await historyCount(pool) == 3)
            #expect(try await historyRows(pool).map(\.checksum) == recorded.map(\.checksum), "the recorded checksums stay")

            let status = try await runner.status(folder)
            #expect(status.map(\.state) == [.applied, .changed, .applied, .pending])
            #expect(status.contains { $0.needsAttention })
        }
    }

    @Test("a recorded file that is missing is refused")
    func missingFileRefused() async throws {
        try await withApplied(threeTables) { (runner, pool, folder) async throws in

            try folder.remove("0003_create_t3.sql")
            try folder.write("0004_create_t4.sql", "create table t4 (id int);\n")
            expect(await runner.refusal(folder), mentions: "0003_create_t3.sql", "missing")
            #expect(!(try await tableExists(pool, "t4")))
            #expect(try await historyCount(pool) == 3)

            let status = try await runner.status(folder)
            #expect(status.map(\.state) == [.applied, .applied, .missing, .pending])
        }
    }

    @Test("a recorded file is missing even when the folder is now empty")
    func allFilesMissingRefused() async throws {
        try await withApplied(threeTables) { (runner, pool, folder) async throws in
            for name in ["0001_create_t1.sql", "0002_create_t2.sql", "0003_create_t3.sql"] { try folder.remove(name) }

            // `status` already reports the three rows as missing …
            let status = try await runner.status(folder)
            #expect(status.map(\.state) == [.missing, .missing, .missing])
            // … and `up` refuses too, even though the folder is now empty.
            expect(await runner.refusal(folder), mentions: "missing")
        }
    }

    @Test("CRLF line endings (and a UTF-8 BOM) are not an edit")
    func lineEndingsAreNotAnEdit() async throws {
        try await withApplied(threeTables) { (runner, pool, folder) async throws in
            let recorded = try await historyRows(pool)

            let original = String(decoding: try folder.bytes("0002_create_t2.sql"), as: UTF8.self)
            let crlf = Data(original.replacingOccurrences(of: "\n", with: "\r\n").utf8)
            try folder.write("0002_create_t2.sql", bytes: crlf)
            #expect(try folder.bytes("0002_create_t2.sql").contains(0x0D), "the rewritten file really has CR bytes")
            let withBOM = Data([0xEF, 0xBB, 0xBF]) + Data(String(decoding: try folder.bytes("0003_create_t3.sql"), as: UTF8.self).utf8)
            try folder.write("0003_create_t3.sql", bytes: withBOM)
            try folder.write("0004_create_t4.sql", "create table t4 (id int);\n")

            let outcome = try await runner.up(folder)
            #expect(outcome.applied.map(\.version) == ["0004"])
            #expect(try await tableExists(pool, "t4"))
            let rows = try await historyRows(pool)
            #expect(rows.prefix(3).map(\.checksum) == recorded.map(\.checksum))
            let status = try await runner.status(folder)
            #expect(status.map(\.state) == [.applied, .applied, .applied, .applied])
        }
    }

    // MARK: 4. A failing file leaves no trace

    @Test("a failing file leaves no trace; fixed, it applies with the files after it")
    func failingFileLeavesNoTrace() async throws {
        let folder = try MigrationFolder([
            "0001_create_t1.sql": "create table t1 (id int);\n",
            "0002_create_t2.sql": "create table t2 (id int);\ninsert into t2 values (1);\nselect 1/0;\n",
            "0003_create_t3.sql": "create table t3 (id int);\n",
        ])
        try await withRunner { (runner, pool) async throws in
            expect(await runner.refusal(folder), mentions: "0002_create_t2.sql", "division by zero", "22012")

            #expect(try await tableExists(pool, "t1"), "0001 was applied before 0002 failed")
            #expect(!(try await tableExists(pool, "t2")), "0002's DDL must be rolled back")
            #expect(!(try await tableExists(pool, "t3")), "0003 must not run after 0002 failed")
            #expect(try await historyRows(pool).map(\.version) == ["0001"])

            try folder.write("0002_create_t2.sql", "create table t2 (id int);\ninsert into t2 values (1);\nselect 1/1;\n")
            let outcome = try await runner.up(folder)
            #expect(outcome.applied.map(\.version) == ["0002", "0003"])
            #expect(try await count(pool, "select count(*) from t2") == 1)
            #expect(try await tableExists(pool, "t3"))
            #expect(try await historyRows(pool).map(\.version) == ["0001", "0002", "0003"])
        }
    }

    // MARK: 5. A file with its own COMMIT

    @Test("a file that commits on its own is refused and leaves no history row")
    func fileWithCommitRefused() async throws {
        let folder = try MigrationFolder([
            "0001_create_t1.sql": "create table t1 (id int);\n",
            "0002_commit_itself.sql": "create table t_commit (id int);\ncommit;\n",
            "0003_create_t3.sql": "create table t3 (id int);\n",
        ])
        try await withRunner { (runner, pool) async throws in
            expect(await runner.refusal(folder), mentions: "0002_commit_itself.sql", "ended the transaction itself")
            #expect(try await historyRows(pool).map(\.version) == ["0001"], "no history row for the refused file")
            #expect(!(try await tableExists(pool, "t3")), "nothing after the refused file runs")

            // The file's own COMMIT already made its DDL permanent before the runner could notice.
            #expect(!(try await tableExists(pool, "t_commit")), "the file's own COMMIT failed, so its DDL rolled back")
            // Still refused on the next run (no history row, so it is pending again and fails the same way).
            await #expect(throws: MigrationError.self) {
                _ = try await runner.up(folder)
            }
        }
    }

    // MARK: 6. -- migrate:no-transaction

    @Test("a -- migrate:no-transaction file runs outside a transaction (create index concurrently)")
    func noTransactionFile() async throws {
        let folder = try MigrationFolder([
            "0001_create_t1.sql": "create table t1 (id int, label text);\ninsert into t1 select g, 'x' || g from generate_series(1, 100) g;\n",
            "0002_index_t1_label.sql":
                "-- index t1.label without blocking writes\n-- migrate:no-transaction\n\ncreate index concurrently t1_label_idx on t1 (label);\n",
        ])
        #expect(try folder.load().map(\.transactional) == [true, false])
        try await withRunner { (runner, pool) async throws in
            let outcome = try await runner.up(folder)
            #expect(outcome.applied.map(\.version) == ["0001", "0002"])
            #expect(
                try await count(
                    pool, "select count(*) from pg_index where indexrelid = to_regclass('t1_label_idx') and indisvalid and indisready"
                ) == 1,
                "the concurrently built index exists and is valid"
            )
            let rows = try await historyRows(pool)
            #expect(rows.map(\.transactional) == [true, false])
            #expect(rows.map(\.success) == [true, true])
            #expect(try await runner.up(folder).applied.isEmpty)
        }
    }

    @Test("a failed -- migrate:no-transaction file is recorded as failed and blocks later runs")
    func failedNoTransactionFile() async throws {
        let folder = try MigrationFolder([
            "0001_create_t1.sql": "create table t1 (id int);\n",
            "0002_index_missing.sql": "-- migrate:no-transaction\ncreate index concurrently nope_idx on no_such_table (id);\n",
        ])
        try await withRunner { (runner, pool) async throws in
            expect(await runner.refusal(folder), mentions: "0002_index_missing.sql")
            let rows = try await historyRows(pool)
            #expect(rows.map(\.version) == ["0001", "0002"])
            #expect(rows.map(\.success) == [true, false])

            expect(await runner.refusal(folder), mentions: "failed part-way")
            let status = try await runner.status(folder)
            #expect(status.map(\.state) == [.applied, .failed])
        }
    }

    // MARK: 7. Concurrent runners

    @Test("four runners started together apply each file exactly once")
    func concurrentRunners() async throws {
        let folder = try MigrationFolder([
            "0001_create_counter.sql": "create table counter (file text primary key);\ninsert into counter values ('0001');\nselect pg_sleep(1);\n",
            "0002_count_two.sql": "insert into counter values ('0002');\n",
            "0003_count_three.sql": "insert into counter values ('0003');\n",
        ])
        try await withEmptyDatabase { (database, pool) async throws in
            let appliedCounts = try await upConcurrently(4, on: database, folder)
            #expect(appliedCounts.count == 4)
            #expect(
                appliedCounts.filter { $0 == ["0001_create_counter.sql", "0002_count_two.sql", "0003_count_three.sql"] }.count == 1,
                "exactly one runner applies: \(appliedCounts)")
            #expect(appliedCounts.filter(\.isEmpty).count == 3, "the others apply nothing: \(appliedCounts)")
            #expect(try await count(pool, "select count(*) from counter") == 3)
            #expect(try await historyCount(pool) == 3)
            #expect(
                try await count(
                    pool,
                    "select count(*) from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())"
                ) == 0, "the lock is released")
        }
    }

    // MARK: 9. Out of order

    @Test("a new file older than the newest applied one is refused")
    func outOfOrderRefused() async throws {
        let folder = try MigrationFolder([
            "0001_create_t1.sql": "create table t1 (id int);\n",
            "0003_create_t3.sql": "create table t3 (id int);\n",
        ])
        try await withRunner { (runner, pool) async throws in
            #expect(try await runner.up(folder).applied.map(\.version) == ["0001", "0003"])

            try folder.write("0002_create_t2.sql", "create table t2 (id int);\n")
            expect(await runner.refusal(folder), mentions: "0002_create_t2.sql", "older than the newest applied")
            #expect(!(try await tableExists(pool, "t2")))
            #expect(try await historyRows(pool).map(\.version) == ["0001", "0003"])
        }
    }

    // MARK: Scopes

    @Test("a refused app history applies no pending core file either")
    func refusedAppHistoryBlocksCore() async throws {
        let core = try MigrationFolder()
        try core.write("0001_create_c1.sql", "create table c1 (id int);\n")
        let app = try MigrationFolder()
        try app.write("0001_create_a1.sql", "create table a1 (id int);\n")
        try await withRunner { (runner, pool) async throws in
            let first = try await runner.up(core: try core.load(.core), app: try app.load(.app))
            #expect(first.applied.map { "\($0.scope.rawValue)/\($0.version)" } == ["core/0001", "app/0001"])

            // A new core file (a newer binary) and an edited app file: the run is refused …
            try core.write("0002_create_c2.sql", "create table c2 (id int);\n")
            try app.write("0001_create_a1.sql", "create table a1 (id bigint);\n")
            let error = await #expect(throws: MigrationError.self) {
                _ = try await runner.up(core: try core.load(.core), app: try app.load(.app))
            }
            #expect(error?.description.contains("0001_create_a1.sql") == true)
            // … and, as MigrationRunner's doc says ("before applying anything"), the pending core file is not applied.
            #expect(!(try await tableExists(pool, "c2")), "core 0002 must not be applied when the app history is refused")
            #expect(try await historyCount(pool) == 2)
        }
    }

    @Test("scopes keep separate histories: the same version may exist in core and app")
    func scopesAreSeparate() async throws {
        let core = try MigrationFolder()
        try core.write("0001_create_c1.sql", "create table c1 (id int);\n")
        let app = try MigrationFolder()
        try app.write("0001_create_a1.sql", "create table a1 (id int);\n")
        try await withRunner { (runner, pool) async throws in
            _ = try await runner.up(core: try core.load(.core), app: try app.load(.app))
            let rows = try await historyRows(pool)
            #expect(rows.map { "\($0.scope)/\($0.version)/\($0.name)" } == ["app/0001/create_a1", "core/0001/create_c1"])

            // Without an app folder, the app rows are only listed as recorded.
            let status = try await runner.status(core: try core.load(.core), app: nil)
            #expect(status.map(\.state) == [.applied, .recorded])
            #expect(!status.contains { $0.needsAttention })
        }
    }
}

@Suite("Migration files")
struct MigrationFileTests {
    @Test("loads NNNN_name.sql files sorted by number and ignores other files")
    func loadsSorted() throws {
        let folder = try MigrationFolder([
            "0010_later.sql": "select 1;\n",
            "0002_earlier.sql": "select 1;\n",
            "README.md": "not a migration\n",
        ])
        let files = try folder.load()
        #expect(files.map(\.version) == ["0002", "0010"])
        #expect(files.map(\.name) == ["earlier", "later"])
        #expect(files.allSatisfy { $0.scope == .app && isSHA256Checksum($0.checksum) })
    }

    @Test("refuses badly named files and duplicate versions")
    func refusesBadNames() throws {
        let badName = try MigrationFolder()
        try badName.write("create_things.sql", "select 1;\n")
        let error = #expect(throws: MigrationError.self) { try badName.load() }
        #expect(error?.description.contains("create_things.sql") == true)

        let duplicate = try MigrationFolder([
            "0001_a.sql": "select 1;\n",
            "01_b.sql": "select 2;\n",
        ])
        let duplicateError = #expect(throws: MigrationError.self) { try duplicate.load() }
        #expect(duplicateError?.description.contains("share version") == true)
    }

    @Test("the checksum ignores CRLF and a BOM but sees any other change")
    func checksumNormalisation() {
        let lf = MigrationFile(scope: .app, version: "0001", name: "x", contents: Data("create table a (id int);\nselect 1;\n".utf8))
        let crlf = MigrationFile(scope: .app, version: "0001", name: "x", contents: Data("create table a (id int);\r\nselect 1;\r\n".utf8))
        let bom = MigrationFile(
            scope: .app, version: "0001", name: "x", contents: Data([0xEF, 0xBB, 0xBF]) + Data("create table a (id int);\nselect 1;\n".utf8))
        let edited = MigrationFile(scope: .app, version: "0001", name: "x", contents: Data("create table a (id int);\nselect 2;\n".utf8))
        #expect(lf.checksum == crlf.checksum)
        #expect(lf.checksum == bom.checksum)
        #expect(lf.checksum != edited.checksum)
        // `printf 'create table a (id int);\nselect 1;\n' | sha256sum`
        #expect(lf.checksum == "sha256:622f26749e98f579542aea0a849e7ddbb99843ce07887355d8f9af0a72299509")
    }
}
