import ArgumentParser
import Foundation
import GuestPassApp
import GuestPassCrypto
import GuestPassPostgres
import GuestPassStore

/// `guestpass apps create`: registers an app (a tenant) and prints its two API keys once.
struct AppsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps", abstract: "Manage apps, their API keys and settings.",
        subcommands: [Create.self, List.self, Configure.self, RotateKeys.self, RevokeKey.self, GrantCredits.self, SetPremium.self]
    )

    /// `guestpass apps configure`: quota, DeviceCheck, Sign in with Apple, share-code, partner, email and storage settings of one app.
    struct Configure: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change an app's quota, DeviceCheck, Sign in with Apple, share-code and partner settings.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The app id.") var app: UUID
        @Option(help: "Free consumptions per day (default 3).") var dailyFree: Int?
        @Option(help: "Credits of the one-time welcome grant (default 10).") var welcomeCredits: Int?
        @Option(help: "Apple team id for DeviceCheck.") var devicecheckTeamId: String?
        @Option(help: "Key id of the DeviceCheck .p8 key.") var devicecheckKeyId: String?
        @Option(help: "Path of the DeviceCheck .p8 key, readable by the server.") var devicecheckKeyPath: String?
        @Option(help: "development or production.") var devicecheckEnvironment: String?
        @Option(help: "A base URL instead of Apple's hosts (the local stand-in).") var devicecheckBaseUrl: String?
        @Option(help: "Sign in with Apple: the accepted audiences (bundle ids, Services ids), comma-separated; \"\" turns it off.")
        var appleAudiences: String?
        @Option(help: "Sign in with Apple: a base URL instead of https://appleid.apple.com (the local stand-in).") var appleBaseUrl: String?
        @Option(help: "The role complete_account_setup assigns once (e.g. client).") var defaultRole: String?
        @Option(help: "Share codes: characters per code (4 to 12, default 6).") var shareCodeLength: Int?
        @Option(help: "Share codes: digits only (true, for a keypad) or the look-alike-free alphabet (false, default).")
        var shareCodeDigitsOnly: Bool?
        @Option(help: "Partners a user may have at once (1 to 100, default 1).") var partnerLimit: Int?
        @Option(help: "Sign in with Apple: the Apple team id, for the code exchange and revocation.") var appleTeamId: String?
        @Option(help: "Sign in with Apple: the key id of the .p8 key.") var appleKeyId: String?
        @Option(help: "Sign in with Apple: the path of the .p8 key, readable by the server.") var appleKeyPath: String?
        @Option(help: "guestpass prune: days without a sign-in, refresh or request before a guest that holds nothing goes (1 to 3650, default 90).")
        var guestIdleDays: Int?
        @OptionGroup var email: EmailOptions
        @Option(help: "Storage: the largest object one upload may store, in bytes (default 52428800 = 50 MiB; a bucket may lower it).")
        var storageUploadBytesLimit: Int64?
        @Option(help: "Storage: the bytes one user's objects may hold in all (default 104857600 = 100 MiB; 0 = none).")
        var storageUserBytesLimit: Int64?
        @Option(help: "Storage: the objects one user may hold (default 1000; 0 = none).") var storageUserObjectsLimit: Int?

        func validate() throws {
            if let value = self.dailyFree, value < 0 { throw ValidationError("--daily-free must be ≥ 0") }
            if let value = self.welcomeCredits, value < 0 { throw ValidationError("--welcome-credits must be ≥ 0") }
            if let value = self.guestIdleDays, !(1...3650).contains(value) { throw ValidationError("--guest-idle-days must be in 1...3650") }
            if let value = self.devicecheckEnvironment, !["development", "production"].contains(value) {
                throw ValidationError("--devicecheck-environment must be development or production")
            }
        }

        func run() async throws {
            var settings = Administration.AppSettings()
            settings.dailyFreeAllowance = self.dailyFree
            settings.welcomeGrantCredits = self.welcomeCredits
            settings.deviceCheckTeamID = self.devicecheckTeamId
            settings.deviceCheckKeyID = self.devicecheckKeyId
            settings.deviceCheckKeyPath = self.devicecheckKeyPath
            settings.deviceCheckEnvironment = self.devicecheckEnvironment
            settings.deviceCheckBaseURL = self.devicecheckBaseUrl
            settings.appleAudiences = self.appleAudiences.map {
                $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            }
            settings.appleBaseURL = self.appleBaseUrl
            settings.defaultRole = self.defaultRole
            settings.shareCodeLength = self.shareCodeLength
            settings.shareCodeDigitsOnly = self.shareCodeDigitsOnly
            settings.partnerLimit = self.partnerLimit
            settings.appleTeamID = self.appleTeamId
            settings.appleKeyID = self.appleKeyId
            settings.appleKeyPath = self.appleKeyPath
            settings.guestIdleDays = self.guestIdleDays
            try self.email.apply(to: &settings, app: self.app)
            settings.storageUploadBytesLimit = self.storageUploadBytesLimit
            settings.storageUserBytesLimit = self.storageUserBytesLimit
            settings.storageUserObjectsLimit = self.storageUserObjectsLimit
            guard !settings.isEmpty else { throw ValidationError("nothing to change") }
            let updated = try await withAdministration(self.database) { try await $0.configureApp(self.app, settings) }
            guard updated else { throw ValidationError("no app with id \(self.app)") }
            print("Updated app \(self.app.uuidString.lowercased()).")
        }
    }

    /// `guestpass apps grant-credits`: adds credits to a user, with a ledger row.
    struct GrantCredits: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "grant-credits", abstract: "Grant credits to a user (recorded in the ledger).")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The user id.") var user: UUID
        @Option(help: "How many credits (> 0).") var amount: Int
        @Option(help: "Why, for the ledger.") var reason: String = "admin_grant"

        func run() async throws {
            guard let amount = Int32(exactly: self.amount), amount > 0 else { throw ValidationError("--amount must be in 1...\(Int32.max)") }
            let balance = try await withAdministration(self.database) {
                try await $0.grantCredits(user: self.user, amount: amount, reason: self.reason)
            }
            print("Balance of \(self.user.uuidString.lowercased()): \(balance) credits.")
        }
    }

    /// `guestpass apps set-premium`: marks a user premium (unmetered) or not.
    struct SetPremium: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set-premium", abstract: "Mark a user premium or not.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The user id.") var user: UUID
        @Option(help: "true or false.") var premium: Bool

        func run() async throws {
            let updated = try await withAdministration(self.database) { try await $0.setPremium(user: self.user, premium: self.premium) }
            guard updated else { throw ValidationError("no user with id \(self.user)") }
            print("User \(self.user.uuidString.lowercased()) is\(self.premium ? "" : " not") premium.")
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an app and print its publishable (anon) and secret (service role) keys. They are stored hashed: save them now."
        )
        @OptionGroup var database: DatabaseOptions
        @Option(help: "A name for the app.") var name: String
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            guard !self.name.trimmingCharacters(in: .whitespaces).isEmpty, self.name.count <= 200 else {
                throw ValidationError("--name must be 1 to 200 characters")
            }
        }

        func run() async throws {
            let name = self.name
            let (appID, publishable, secret) = try await withAdministration(self.database) { try await $0.createApp(name: name) }
            if self.json {
                let object = [
                    "app_id": appID.uuidString.lowercased(), "name": name, "publishable_key": publishable.value, "secret_key": secret.value,
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("app_id:          \(appID.uuidString.lowercased())")
                print("publishable key: \(publishable.value)")
                print("secret key:      \(secret.value)")
                print("Keys are stored hashed and cannot be shown again.")
            }
        }
    }
}

extension AppsCommand {
    /// `guestpass apps list`: every app with its keys (ids, kinds, first characters, dates; never the keys).
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the apps and their API keys (never the keys themselves).")
        @OptionGroup var database: DatabaseOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let apps = try await withAdministration(self.database) { try await $0.listApps() }
            if self.json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(apps), as: UTF8.self))
                return
            }
            for app in apps {
                print("\(app.app_id)  \(app.name)")
                for key in app.keys {
                    print(
                        "  \(key.id)  \(key.kind.padding(toLength: 11, withPad: " ", startingAt: 0)) \(key.prefix)…  created \(key.created_at)"
                            + (key.revoked_at.map { "  revoked \($0)" } ?? ""))
                }
            }
        }
    }

    /// `guestpass apps rotate-keys`: new publishable and secret keys; the old ones work until `revoke-key`.
    struct RotateKeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-keys",
            abstract: "Make new publishable and secret keys for an app. The old keys keep working until revoke-key: ship the new ones first."
        )
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The app id.") var app: UUID

        func run() async throws {
            let app = self.app
            guard let keys = try await withAdministration(self.database, { try await $0.rotateKeys(app: app) }) else {
                throw ValidationError("no app with id \(app)")
            }
            print("publishable key: \(keys.publishable.value)")
            print("secret key:      \(keys.secret.value)")
            print("Keys are stored hashed and cannot be shown again. Revoke the old ones with `guestpass apps revoke-key`.")
        }
    }

    /// `guestpass apps revoke-key`: one key of an app stops working (within the servers' one-minute key cache).
    struct RevokeKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-key",
            abstract: "Revoke one API key of an app (the key, or its id from `apps list`). Servers refuse it within a minute."
        )
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The app id.") var app: UUID
        @Option(help: "The key itself, or its id from `guestpass apps list`.") var key: String

        func run() async throws {
            let (app, key) = (self.app, self.key)
            guard try await withAdministration(self.database, { try await $0.revokeKey(app: app, key: key) }) else {
                throw ValidationError("app \(app) has no live key like that")
            }
            print("Revoked.")
        }
    }
}

/// A one-connection pool on the owner URL, for administrative commands.
func adminConfiguration(_ database: DatabaseOptions) throws -> PostgresConfiguration {
    var configuration = PostgresConfiguration(url: try database.resolvedURL())
    configuration.maxConnections = 1
    configuration.applicationName = "guestpass-admin"
    configuration.poolMode = try AppConfiguration.poolMode(environment: ProcessInfo.processInfo.environment)
    return configuration
}

/// Runs `body` with an admin pool and shuts the pool down afterwards.
func withAdminPool<R: Sendable>(_ database: DatabaseOptions, _ body: (PostgresPool) async throws -> R) async throws -> R {
    try await withPool(try adminConfiguration(database), body)
}

/// Runs `body` with the operator's `Administration` over an admin pool, shut down afterwards.
func withAdministration<R: Sendable>(_ database: DatabaseOptions, _ body: (Administration) async throws -> R) async throws -> R {
    try await withAdminPool(database) { try await body(Administration(pool: $0)) }
}

/// Runs `body` with a pool for `configuration`, shutting it down afterwards whatever happens.
func withPool<R: Sendable>(_ configuration: PostgresConfiguration, _ body: (PostgresPool) async throws -> R) async throws -> R {
    try await withShutdown(PostgresPool(configuration: configuration), body)
}
