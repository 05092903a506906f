import CoreMigrations
import Foundation
import GuestPassMigrations
import GuestPassPostgres
import GuestPassTestSupport
import Testing

/// `guestpass migrate up|status --dir`, through the built binary (`GUESTPASS_BIN`).
@Suite("guestpass migrate (binary)")
struct MigrateCommandTests {
    @Test("migrate up --dir applies core then app; status lists version, name, checksum and state")
    func upAndStatus() async throws {
        try await CoreRoles.ensure()
        let coreSet = try MigrationSet.core()
        let core = coreSet.versioned
        let app = try MigrationFolder()
        // References a core table, so it can only apply after the core migrations.
        try app.write("0001_create_notes.sql", "create table public.notes (id int primary key, user_id uuid references public.users (id));\n")
        try app.write("0002_add_notes_body.sql", "alter table public.notes add column body text;\n")

        try await withEmptyDatabase { (database, pool) async throws in
            // up: core, then the app folder.
            let up = try await runGuestpass(["migrate", "up", "--dir", app.url.path], databaseURL: database.ownerURL)
            #expect(up.status == 0, "\(up.summary)")
            let rows = try await historyRows(pool)
            #expect(rows.filter { $0.scope == "core" }.map(\.version) == core.map(\.version))
            #expect(rows.filter { $0.scope == "app" }.map(\.version) == ["0001", "0002"])
            #expect(try await tableExists(pool, "public.notes"))
            let lastCore = try #require(rows.filter { $0.scope == "core" }.map(\.appliedAt).max())
            let firstApp = try #require(rows.filter { $0.scope == "app" }.map(\.appliedAt).min())
            #expect(lastCore <= firstApp, "app files are applied after the core ones")

            // The core's repeatable files ran too, each recorded with its checksum.
            #expect(try await repeatableRows(pool).map(\.name) == coreSet.repeatable.map(\.name))
            #expect(try await repeatableRows(pool).map(\.checksum) == coreSet.repeatable.map(\.checksum))

            // status: every core file (versioned, then repeatable) and app file, applied.
            let status = try await runGuestpass(["migrate", "status", "--dir", app.url.path], databaseURL: database.ownerURL)
            #expect(status.status == 0, "\(status.summary)")
            let appFiles = try app.load()
            let expected =
                coreSet.all.map {
                    StatusLine(scope: "core", version: $0.version, name: $0.name, state: "applied", appliedAt: "", checksum: $0.checksum)
                }
                + appFiles.map {
                    StatusLine(scope: "app", version: $0.version, name: $0.name, state: "applied", appliedAt: "", checksum: $0.checksum)
                }
            let lines = parseStatus(status.stdout)
            #expect(lines.map(\.withoutTime) == expected, "\(status.summary)")
            #expect(lines.allSatisfy { isSHA256Checksum($0.checksum) })
            #expect(lines.allSatisfy { $0.appliedAt != "-" }, "applied rows show when they were applied")

            // A new app file is pending (not an error).
            try app.write("0003_add_notes_flag.sql", "alter table public.notes add column flag boolean;\n")
            let pending = try await runGuestpass(["migrate", "status", "--dir", app.url.path], databaseURL: database.ownerURL)
            #expect(pending.status == 0, "\(pending.summary)")
            let pendingLine = parseStatus(pending.stdout).first { $0.scope == "app" && $0.version == "0003" }
            #expect(pendingLine?.state == "pending", "\(pending.summary)")
            #expect(pendingLine?.name == "add_notes_flag")
            #expect(pendingLine?.appliedAt == "-")

            // An edited applied app file is changed, and status exits non-zero.
            try app.write("0002_add_notes_body.sql", "alter table public.notes add column body varchar(100);\n")
            let changed = try await runGuestpass(["migrate", "status", "--dir", app.url.path], databaseURL: database.ownerURL)
            #expect(changed.status != 0, "status must fail when a file changed: \(changed.summary)")
            let changedLines = parseStatus(changed.stdout)
            #expect(changedLines.first { $0.scope == "app" && $0.version == "0002" }?.state == "changed", "\(changed.summary)")
            #expect(changedLines.first { $0.scope == "app" && $0.version == "0001" }?.state == "applied")
            #expect(changedLines.first { $0.scope == "app" && $0.version == "0003" }?.state == "pending")

            // And `up` refuses with a clear message and a non-zero exit, applying nothing.
            let refused = try await runGuestpass(["migrate", "up", "--dir", app.url.path], databaseURL: database.ownerURL)
            #expect(refused.status != 0, "\(refused.summary)")
            #expect(refused.stderr.contains("0002_add_notes_body.sql") && refused.stderr.contains("edited"), "\(refused.summary)")
            #expect(try await count(pool, "select count(*) from information_schema.columns where table_name = 'notes' and column_name = 'flag'") == 0)
            #expect(try await historyRows(pool).filter { $0.scope == "app" }.count == 2)
        }
    }

    @Test("migrate up --dir applies the pending app files of an already migrated database")
    func upAppliesPendingAppFiles() async throws {
        try await CoreRoles.ensure()
        let app = try MigrationFolder()
        try app.write("0001_create_notes.sql", "create table public.notes (id int primary key);\n")
        try await withEmptyDatabase { (database, pool) async throws in
            let coreOnly = try await runGuestpass(["migrate", "up"], databaseURL: database.ownerURL)
            #expect(coreOnly.status == 0, "\(coreOnly.summary)")
            #expect(try await historyRows(pool).allSatisfy { $0.scope == "core" })

            let withApp = try await runGuestpass(["migrate", "up", "--dir", app.url.path], databaseURL: database.ownerURL)
            #expect(withApp.status == 0, "\(withApp.summary)")
            #expect(withApp.stdout.contains("Applied 1 migration"), "\(withApp.summary)")
            let again = try await runGuestpass(["migrate", "up", "--dir", app.url.path], databaseURL: database.ownerURL)
            #expect(again.status == 0)
            #expect(again.stdout.contains("Nothing to apply"), "\(again.summary)")

            let status = try await runGuestpass(["migrate", "status", "--dir", app.url.path], databaseURL: database.ownerURL)
            #expect(status.status == 0, "\(status.summary)")
            #expect(parseStatus(status.stdout).filter { $0.scope == "app" }.map(\.state) == ["applied"], "\(status.summary)")
        }
    }
}

extension StatusLine {
    /// The line with its time column blanked, for comparing with expectations.
    var withoutTime: StatusLine {
        StatusLine(scope: self.scope, version: self.version, name: self.name, state: self.state, appliedAt: "", checksum: self.checksum)
    }
}
