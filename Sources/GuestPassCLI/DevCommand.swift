import ArgumentParser
import Foundation
import GuestPassDevStack

/// `guestpass dev up|down`: the one stack set-up (`DevStack`) that `scripts/serve`, `bench/` and `e2e/` run.
struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev", abstract: "Bring a development or test stack up on a PostgreSQL cluster, or drop it.",
        subcommands: [Up.self, Down.self]
    )

    struct Up: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the database if missing, migrate, create apps with API keys and a signing key; describe the stack.",
            discussion: """
                Idempotent. --database-url is a superuser URL of the cluster (any database). The description (JSON with \
                --json) holds the apps' secret keys and the environment `guestpass serve` needs (serve_environment). \
                With --state FILE, the apps of the description kept in FILE are reused while the database is the same \
                one and their keys are current, and FILE is rewritten (mode 0600).
                """
        )
        @OptionGroup var database: DatabaseOptions
        @Option(name: .customLong("database"), help: "The database to bring up (created when missing).") var name: String
        @Option(help: "An app's own folder of migrations, applied after the core ones (e.g. sql/examples).") var dir: String?
        @Option(name: .customLong("app"), help: "An app to have (repeatable).") var apps: [String] = []
        @Option(help: "The ES256 signing key file; generated when missing.") var keyFile: String?
        @Option(help: "Where the stack's description is kept between runs (reused apps).") var state: String?
        @Flag(help: "Print the description as JSON.") var json = false

        func validate() throws {
            for app in self.apps where app.trimmingCharacters(in: .whitespaces).isEmpty || app.count > 200 {
                throw ValidationError("--app must be 1 to 200 characters")
            }
            guard Set(self.apps).count == self.apps.count else { throw ValidationError("--app names must differ") }
        }

        func run() async throws {
            var plan = DevStack.Plan(clusterURL: try self.database.resolvedURL(), database: self.name)
            plan.appMigrations = self.dir.map { URL(fileURLWithPath: $0, isDirectory: true) }
            plan.appNames = self.apps
            plan.signingKeyFile = self.keyFile
            if let state = self.state, let data = FileManager.default.contents(atPath: state) {
                plan.previous = try? JSONDecoder().decode(DevStack.Description.self, from: data)
            }
            let logger = bootstrapLogging(label: "guestpass.dev")
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let stack: DevStack.Description
            let json: Data
            do {
                stack = try await DevStack.up(plan, logger: logger)
                json = try encoder.encode(stack)
                if let state = self.state { try DevStack.writePrivately(json, to: state) }
            } catch let error as DevStackError {
                throw ValidationError(error.description)
            }
            if self.json {
                print(String(decoding: json, as: UTF8.self))
            } else {
                print("database \(stack.database): \(stack.loginURL) (owner: \(stack.ownerURL))")
                for app in stack.apps {
                    print("app \(app.name): \(app.appID)\n  publishable key: \(app.publishableKey)\n  secret key:      \(app.secretKey)")
                }
                if let key = stack.jwtSigningKeyFile { print("signing key: \(key)") }
            }
        }
    }

    struct Down: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Drop a database brought up with `dev up` (its sessions are ended).")
        @OptionGroup var database: DatabaseOptions
        @Option(name: .customLong("database"), help: "The database to drop.") var name: String

        func run() async throws {
            do {
                try await DevStack.down(database: self.name, clusterURL: try self.database.resolvedURL())
            } catch let error as DevStackError {
                throw ValidationError(error.description)
            }
        }
    }
}
