import CoreMigrations
import Foundation
import GuestPassMigrations
import GuestPassPostgres
import GuestPassTestSupport
import Logging
import Testing

// MARK: - Databases

/// Runs `body` against a fresh, empty database (no migrations) and its owner pool; drops both afterwards.
func withEmptyDatabase(_ body: (TestDatabase, PostgresPool) async throws -> Void) async throws {
    try await TestDatabase.with(migrated: false, pool: { $0.ownerPool() }, body)
}

/// Makes sure the cluster-wide roles of the core migrations exist before a test applies the core migrations to an
/// empty database. Two databases running `0001_create_roles.sql` for the very first time at the same moment race on
/// `pg_authid` (23505, see the report); building the shared migrated template once, first, avoids that.
enum CoreRoles {
    private static let warmUp = Task<Void, any Error> {
        let database = try await TestDatabase.create(migrated: true)
        await database.drop()
    }

    static func ensure() async throws {
        try await self.warmUp.value
    }
}

/// A runner that logs warnings only.
func makeRunner(_ pool: PostgresPool) -> MigrationRunner {
    var logger = Logger(label: "test.migrate")
    logger.logLevel = .warning
    return MigrationRunner(pool: pool, logger: logger)
}

/// Runs `body` with a runner (`makeRunner`) on a fresh, empty database and its owner pool; drops both afterwards.
func withRunner(_ body: (MigrationRunner, PostgresPool) async throws -> Void) async throws {
    try await withEmptyDatabase { _, pool in try await body(makeRunner(pool), pool) }
}

/// Runs `body` with a runner (`makeRunner`) on a fresh, empty database to which a folder of `files` has been applied:
/// where the tests of a changed folder start.
func withApplied(
    _ files: KeyValuePairs<String, String>, _ body: (MigrationRunner, PostgresPool, MigrationFolder) async throws -> Void
) async throws {
    let folder = try MigrationFolder(files)
    try await withRunner { (runner, pool) async throws in
        _ = try await runner.up(folder)
        try await body(runner, pool, folder)
    }
}

extension MigrationRunner {
    /// `up` with no core files and `folder` as the app's: its versioned files, then `repeatable/*.sql`.
    func up(_ folder: MigrationFolder) async throws -> Outcome {
        try await self.up(core: MigrationSet(versioned: []), app: try folder.loadSet())
    }

    /// `status` with no core files and `folder` as the app's.
    func status(_ folder: MigrationFolder) async throws -> [MigrationStatus] {
        try await self.status(core: MigrationSet(versioned: []), app: try folder.loadSet())
    }

    /// What `up(folder)` refuses with: the `MigrationError`'s description. Records an issue, and answers "", when it
    /// applies instead or throws another error.
    func refusal(_ folder: MigrationFolder, sourceLocation: SourceLocation = #_sourceLocation) async -> String {
        let error = await #expect(throws: MigrationError.self, sourceLocation: sourceLocation) { _ = try await self.up(folder) }
        return error?.description ?? ""
    }
}

/// Starts `count` runners at once, each with a pool of its own on `database`, that apply `folder` as the app's files;
/// answers the files each one applied (by file name), in the order they finished.
func upConcurrently(_ count: Int, on database: TestDatabase, _ folder: MigrationFolder) async throws -> [[String]] {
    let set = try folder.loadSet()
    let url = database.ownerURL
    return try await withThrowingTaskGroup(of: [String].self) { group in
        for _ in 0..<count {
            group.addTask {
                try await withShutdown(PostgresPool(configuration: PostgresConfiguration(url: url))) { pool in
                    try await makeRunner(pool).up(core: MigrationSet(versioned: []), app: set).applied.map(\.fileName)
                }
            }
        }
        var all: [[String]] = []
        for try await applied in group { all.append(applied) }
        return all
    }
}

/// Records an issue for each of `words` that `message` does not contain.
func expect(_ message: String, mentions words: String..., sourceLocation: SourceLocation = #_sourceLocation) {
    for word in words {
        #expect(message.contains(word), "the message should say \"\(word)\": \(message)", sourceLocation: sourceLocation)
    }
}

func count(_ pool: PostgresPool, _ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> Int {
    try await pool.execute(sql, parameters).rows[0].decode(Int.self, at: 0)
}

func historyCount(_ pool: PostgresPool) async throws -> Int {
    try await count(pool, "select count(*) from guestpass_migrations.history")
}

func tableExists(_ pool: PostgresPool, _ name: String) async throws -> Bool {
    try await pool.execute("select to_regclass($1) is not null", [name]).rows[0].decode(Bool.self, at: 0)
}

/// `sha256:<hex>` of `bytes`, computed by the server (independent of the runner's own digest code).
func serverChecksum(_ pool: PostgresPool, _ bytes: Data) async throws -> String {
    try await pool.execute("select 'sha256:' || encode(sha256($1), 'hex')", [bytes]).rows[0].decode(String.self, at: 0)
}

/// One row of `guestpass_migrations.history`, read straight from the table.
struct HistoryRow: Sendable {
    let scope: String
    let version: String
    let name: String
    let checksum: String
    let transactional: Bool
    let success: Bool
    let appliedAt: Date
    let durationMilliseconds: Int
}

func historyRows(_ pool: PostgresPool) async throws -> [HistoryRow] {
    let result = try await pool.execute(
        """
        select scope, version, name, checksum, transactional, success, applied_at, duration_ms
        from guestpass_migrations.history order by scope, version
        """
    )
    return try result.rows.map { row in
        HistoryRow(
            scope: try row.decode(at: 0), version: try row.decode(at: 1), name: try row.decode(at: 2),
            checksum: try row.decode(at: 3), transactional: try row.decode(at: 4), success: try row.decode(at: 5),
            appliedAt: try row.decode(at: 6), durationMilliseconds: try row.decode(at: 7)
        )
    }
}

/// One row of `guestpass_migrations.repeatables`.
struct RepeatableRow: Sendable, Equatable {
    let scope: String
    let name: String
    let checksum: String
    let success: Bool
    let appliedCount: Int
}

func repeatableRows(_ pool: PostgresPool) async throws -> [RepeatableRow] {
    let result = try await pool.execute(
        "select scope, name, checksum, success, applied_count from guestpass_migrations.repeatables order by scope, name"
    )
    return try result.rows.map { row in
        RepeatableRow(
            scope: try row.decode(at: 0), name: try row.decode(at: 1), checksum: try row.decode(at: 2), success: try row.decode(at: 3),
            appliedCount: try row.decode(at: 4))
    }
}

func isSHA256Checksum(_ text: String) -> Bool {
    guard text.hasPrefix("sha256:") else { return false }
    let hex = text.dropFirst("sha256:".count)
    return hex.count == 64 && hex.allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
}

// MARK: - Migration folders

/// A temporary folder of migration files; removed when the value goes away.
final class MigrationFolder {
    let url: URL

    init() throws {
        self.url = FileManager.default.temporaryDirectory
            .appendingPathComponent("guestpass-migrations-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: self.url, withIntermediateDirectories: true)
    }

    /// A folder holding `files`, file name → SQL text (a name may start with `repeatable/`), written in order.
    convenience init(_ files: KeyValuePairs<String, String>) throws {
        try self.init()
        for (fileName, sql) in files { try self.write(fileName, sql) }
    }

    deinit {
        try? FileManager.default.removeItem(at: self.url)
    }

    func write(_ fileName: String, _ sql: String) throws {
        try self.write(fileName, bytes: Data(sql.utf8))
    }

    func write(_ fileName: String, bytes: Data) throws {
        let file = self.url.appendingPathComponent(fileName)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try bytes.write(to: file)
    }

    func bytes(_ fileName: String) throws -> Data {
        try Data(contentsOf: self.url.appendingPathComponent(fileName))
    }

    func remove(_ fileName: String) throws {
        try FileManager.default.removeItem(at: self.url.appendingPathComponent(fileName))
    }

    func load(_ scope: MigrationScope = .app) throws -> [MigrationFile] {
        try MigrationFile.load(from: self.url, scope: scope)
    }

    /// The versioned files and the repeatable ones (`repeatable/*.sql`).
    func loadSet(_ scope: MigrationScope = .app) throws -> MigrationSet {
        try MigrationSet.load(from: self.url, scope: scope)
    }
}

// MARK: - The guestpass binary

struct CommandResult: Sendable {
    let status: Int32
    let stdout: String
    let stderr: String

    var summary: String { "exit \(self.status)\n--- stdout\n\(self.stdout)\n--- stderr\n\(self.stderr)" }
}

/// Runs the built `guestpass` binary (`GUESTPASS_BIN`, exported by `./scripts/test`) with `DATABASE_URL` set.
func runGuestpass(_ arguments: [String], databaseURL: String) async throws -> CommandResult {
    let environment = ProcessInfo.processInfo.environment
    let binary = try #require(
        environment["GUESTPASS_BIN"].flatMap { $0.isEmpty ? nil : $0 },
        "GUESTPASS_BIN is not set: run the tests with ./scripts/test (it exports the path of the built guestpass binary)"
    )
    try #require(FileManager.default.isExecutableFile(atPath: binary), "GUESTPASS_BIN=\(binary) is not an executable file")

    let outcome = try await ChildProcess.run(binary, arguments, environment: ["DATABASE_URL": databaseURL, "LOG_LEVEL": "warning"])
    return CommandResult(status: outcome.status, stdout: outcome.output, stderr: outcome.errors)
}

/// One line of `guestpass migrate status`: SCOPE VERSION NAME STATE APPLIED-AT CHECKSUM.
struct StatusLine: Sendable, Equatable {
    let scope: String
    let version: String
    let name: String
    let state: String
    let appliedAt: String
    let checksum: String
}

func parseStatus(_ output: String) -> [StatusLine] {
    output.split(separator: "\n").compactMap { line in
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 6, fields[0] == "core" || fields[0] == "app" else { return nil }
        return StatusLine(scope: fields[0], version: fields[1], name: fields[2], state: fields[3], appliedAt: fields[4], checksum: fields[5])
    }
}
