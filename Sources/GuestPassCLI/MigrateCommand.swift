import ArgumentParser
import Foundation
import GuestPassMigrations
import GuestPassPostgres

/// `guestpass migrate up|status`.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply or inspect the SQL migrations (the core ones in the binary, then an app's own folder).",
        subcommands: [Up.self, Status.self]
    )

    struct Options: ParsableArguments {
        @OptionGroup var database: DatabaseOptions

        @Option(
            help: "An app's own folder of NNNN_name.sql migrations (and repeatable/<name>.sql files), applied after the core ones."
        )
        var dir: String?

        func loadFiles() throws -> (core: MigrationSet, app: MigrationSet?) {
            let core = try MigrationSet.core()
            let app = try self.dir.map { try MigrationSet.load(from: URL(fileURLWithPath: $0, isDirectory: true), scope: .app) }
            return (core, app)
        }

        /// Runs `body` with a runner on a one-connection pool; a refusal (`MigrationError`) or a database error is printed
        /// to standard error and exits 1.
        func withRunner<R: Sendable>(_ body: (MigrationRunner) async throws -> R) async throws -> R {
            do {
                var configuration = PostgresConfiguration(url: try self.database.resolvedURL())
                configuration.maxConnections = 1
                configuration.applicationName = "guestpass-migrate"
                configuration.statementTimeout = .seconds(3600)
                configuration.ioTimeout = .seconds(3700)
                let logger = bootstrapLogging(label: "guestpass.migrate")
                return try await withPool(configuration) { pool in try await body(MigrationRunner(pool: pool, logger: logger)) }
            } catch let error as MigrationError {
                printError(error.description)
                throw ExitCode(1)
            } catch let error as PostgresError {
                printError("database error: \(error)")
                throw ExitCode(1)
            }
        }
    }

    struct Up: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply every pending migration, then every changed repeatable file, each in its own transaction.")
        @OptionGroup var options: Options

        func run() async throws {
            let files = try self.options.loadFiles()
            let outcome = try await self.options.withRunner { try await $0.up(core: files.core, app: files.app) }
            if outcome.applied.isEmpty {
                print("Nothing to apply.")
            } else if outcome.repeatable.isEmpty {
                print("Applied \(outcome.versioned.count) migration(s).")
            } else {
                print("Applied \(outcome.versioned.count) migration(s) and \(outcome.repeatable.count) repeatable file(s).")
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List migrations (version, or R for a repeatable file), name, checksum and state.")
        @OptionGroup var options: Options

        func run() async throws {
            let files = try self.options.loadFiles()
            let rows = try await self.options.withRunner { try await $0.status(core: files.core, app: files.app) }
            print(pad("SCOPE", 6), pad("VERSION", 8), pad("NAME", 34), pad("STATE", 9), pad("APPLIED AT", 25), "CHECKSUM")
            for row in rows {
                let applied = row.appliedAt.map { ISO8601DateFormatter().string(from: $0) } ?? "-"
                print(pad(row.scope.rawValue, 6), pad(row.version, 8), pad(row.name, 34), pad(row.state.rawValue, 9), pad(applied, 25), row.checksum)
            }
            if rows.contains(where: \.needsAttention) { throw ExitCode(1) }
        }
    }
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data(("error: " + message + "\n").utf8))
}
