import Foundation
import GuestPassMigrations
import GuestPassPostgres
import GuestPassTestSupport
import Testing

/// The repository's `sql/` folder.
private let sqlFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("sql", isDirectory: true)

/// A folder's files as (name relative to the folder, text without `--` comments).
private func sqlFiles(_ folder: URL) throws -> [(name: String, text: String)] {
    let set = try MigrationSet.load(from: folder, scope: .app)
    return set.all.map { ($0.fileName, $0.sql.replacingOccurrences(of: #"--[^\n]*"#, with: "", options: .regularExpression)) }
}

/// Every `create [or replace] function|procedure schema.name` of `text`, as `schema.name` (public when unqualified).
private func definedFunctions(_ text: String) -> [String] {
    let pattern = #/(?i)\bcreate\s+(?:or\s+replace\s+)?(?:function|procedure)\s+(?:"?([a-z_][a-z0-9_]*)"?\.)?"?([a-z_][a-z0-9_]*)"?\s*\(/#
    return text.matches(of: pattern).map { match in
        "\((match.1.map(String.init) ?? "public").lowercased()).\(String(match.2).lowercased())"
    }
}

/// The functions defined in more than one place among `files`, with where.
private func duplicates(_ files: [(name: String, text: String)]) -> [String: [String]] {
    var places: [String: [String]] = [:]
    for file in files {
        for function in definedFunctions(file.text) { places[function, default: []].append(file.name) }
    }
    return places.filter { $0.value.count > 1 }
}

/// Versioned files hold tables and data, never what a repeatable file re-applies.
private func expectVersionedFilesHoldNoDefinitions(_ files: [(name: String, text: String)]) {
    let repeatableKinds =
        #/(?i)\bcreate\s+(?:or\s+replace\s+)?(?:function|procedure|trigger|constraint\s+trigger|policy|view)\b|\b(?:grant|revoke)\s+[a-z_ ,()]+\s+on\s+(?:function|table|schema)\b|\brow\s+level\s+security\b/#
    #expect(files.contains { $0.name.hasPrefix("repeatable/") }, "the folder has repeatable files")
    for file in files where !file.name.hasPrefix("repeatable/") {
        #expect(file.text.firstMatch(of: repeatableKinds) == nil, "\(file.name) defines a function, trigger, policy, view, grant or RLS switch")
    }
}

/// Repeatable files only create or replace (functions, triggers), and drop a policy before creating it.
private func expectRepeatableFilesReplaceable(_ files: [(name: String, text: String)]) {
    let plainCreate = #/(?i)\bcreate\s+(?:function|procedure|trigger|view|table|index|schema|type|sequence)\b/#
    let policy = #/(?i)\bcreate\s+policy\s+([a-z_0-9]+)\s+on\s+([a-z_0-9.]+)/#
    for file in files where file.name.hasPrefix("repeatable/") {
        #expect(file.text.firstMatch(of: plainCreate) == nil, "\(file.name): a repeatable file uses create or replace, and no tables")
        for match in file.text.matches(of: policy) {
            let drop = "drop policy if exists \(match.1) on \(match.2);"
            #expect(file.text.lowercased().contains(drop), "\(file.name): create policy \(match.1) needs `\(drop)` before it")
        }
    }
}

@Suite("One definition per SQL object in sql/")
struct SQLDefinitionTests {
    /// The core (`sql/migrations`) and the example app (`sql/examples`) keep one split: tables in versioned files,
    /// functions, policies and grants in repeatable ones, each function defined once.
    @Test(
        "each function is defined exactly once, in a repeatable file that only creates or replaces; versioned files hold tables",
        arguments: [(folder: "migrations", functions: 80), (folder: "examples", functions: 10)]
    )
    func functionsOnceInRepeatableFiles(folder: String, functions: Int) throws {
        let files = try sqlFiles(sqlFolder.appendingPathComponent(folder))
        let twice = duplicates(files)
        #expect(twice.isEmpty, "defined in more than one place: \(twice.sorted { $0.key < $1.key })")
        #expect(files.flatMap { definedFunctions($0.text) }.count > functions, "the parser finds the folder's functions")
        expectVersionedFilesHoldNoDefinitions(files)
        expectRepeatableFilesReplaceable(files)
    }

    @Test("the parser sees a second definition")
    func parserFindsDuplicates() {
        let files = [
            (name: "repeatable/a.sql", text: "create or replace function guestpass.f(p int) returns int language sql as $$ select 1 $$;"),
            (
                name: "repeatable/b.sql",
                text: "CREATE FUNCTION GuestPass.F() RETURNS int LANGUAGE sql AS 'select 2';\ncreate function g() returns int"
            ),
        ]
        #expect(duplicates(files) == ["guestpass.f": ["repeatable/a.sql", "repeatable/b.sql"]])
        #expect(definedFunctions(files[1].text) == ["guestpass.f", "public.g"])
    }

    @Test("applying every repeatable file again, the core's and the example app's, changes nothing (they are idempotent)")
    func repeatableFilesAreIdempotent() async throws {
        try await CoreRoles.ensure()
        let core = try MigrationSet.core()
        let app = try MigrationSet.load(from: sqlFolder.appendingPathComponent("examples"), scope: .app)
        try await withEmptyDatabase { (_, pool) async throws in
            _ = try await makeRunner(pool).up(core: core, app: app)
            let before = try await catalogFingerprint(pool)
            try await pool.withConnection { connection in
                try await connection.run { connection in
                    for file in core.repeatable + app.repeatable {
                        _ = try connection.transaction { try $0.executeScript(file.sql) }
                    }
                }
            }
            let after = try await catalogFingerprint(pool)
            #expect(before == after)
            #expect(before.count > 100)
            #expect(before.contains { $0.hasPrefix("policy readings_select_own ") }, "the example app's repeatable files were applied")
        }
    }
}

/// What the repeatable files define, one line per object: functions (body, settings, ACL, comment), triggers,
/// policies, and the ACLs of schemas and tables, in the GuestPass schemas.
private func catalogFingerprint(_ pool: PostgresPool) async throws -> [String] {
    let result = try await pool.execute(
        """
        select 'function ' || p.oid::regprocedure::text || ' ' || md5(p.prosrc) || ' ' || coalesce(p.proconfig::text, '')
               || ' ' || p.prosecdef || ' ' || coalesce(p.proacl::text, '') || ' ' || coalesce(obj_description(p.oid, 'pg_proc'), '')
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname in ('auth', 'guestpass', 'guestpass_server', 'public')
        union all
        select 'trigger ' || t.tgname || ' ' || pg_get_triggerdef(t.oid) || ' ' || coalesce(obj_description(t.oid, 'pg_trigger'), '')
        from pg_trigger t where not t.tgisinternal
        union all
        select 'policy ' || pol.polname || ' ' || pol.polrelid::regclass::text || ' ' || coalesce(pg_get_expr(pol.polqual, pol.polrelid), '')
               || ' ' || coalesce(pg_get_expr(pol.polwithcheck, pol.polrelid), '') || ' ' || pol.polroles::text
               || ' ' || coalesce(obj_description(pol.oid, 'pg_policy'), '')
        from pg_policy pol
        union all
        select 'schema ' || n.nspname || ' ' || coalesce(n.nspacl::text, '') from pg_namespace n
        union all
        select 'table ' || c.oid::regclass::text || ' ' || coalesce(c.relacl::text, '')
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname in ('auth', 'guestpass', 'guestpass_server', 'public')
        union all
        select 'column ' || a.attrelid::regclass::text || '.' || a.attname || ' ' || a.attacl::text
        from pg_attribute a where a.attacl is not null
        """
    )
    return try result.rows.map { try $0.decode(String.self, at: 0) }.sorted()
}
