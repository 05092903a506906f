import ArgumentParser
import Foundation
import GuestPassCrypto
import GuestPassStore

/// `guestpass operators`: the people who sign in to the operator console (`docs/console.md`).
struct OperatorsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operators", abstract: "Manage the operator console's operators.", subcommands: [Create.self, List.self])

    /// `guestpass operators create`: an operator with a password (read from stdin or a file, hashed with the users' KDF)
    /// and optionally a TOTP second factor, whose otpauth URI is printed once.
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a console operator; the password is read from --password-file or the first line of stdin.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The operator's email (their sign-in name).") var email: String
        @Option(help: "A file whose first line is the password (default: stdin).") var passwordFile: String?
        @Flag(help: "Give the operator a TOTP second factor; its otpauth:// URI is printed once, to scan.") var totp = false
        @Flag(help: "Refuse sign-in without the second factor (needs --totp).") var requireTotp = false
        @Flag(help: "The operator sees every app.") var allApps = false
        @Option(help: "An app the operator sees (repeatable).") var app: [UUID] = []
        @Flag(help: "Print JSON (operator_id, otpauth_uri).") var json = false

        func validate() throws {
            if self.requireTotp && !self.totp { throw ValidationError("--require-totp needs --totp") }
            if !self.allApps && self.app.isEmpty { throw ValidationError("name the operator's apps with --app, or give --all-apps") }
            if self.allApps && !self.app.isEmpty { throw ValidationError("--all-apps and --app exclude each other") }
        }

        func run() async throws {
            let line: String?
            if let path = self.passwordFile {
                line = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).first.map(
                    String.init)
            } else {
                line = readLine(strippingNewline: true)
            }
            guard let password = line, password.count >= 12 else { throw ValidationError("the password must have at least 12 characters") }
            let hash = try PasswordHash.hash(Array(password.utf8))
            let secret = self.totp ? try TOTP.newSecret() : nil
            let (email, required, allApps, apps) = (self.email.lowercased(), self.requireTotp, self.allApps, self.app)
            let id = try await withAdministration(self.database) {
                try await $0.createOperator(
                    email: email, passwordHash: hash, totpSecret: secret, totpRequired: required, allApps: allApps, apps: apps)
            }
            let uri = secret.map { TOTP.otpauthURI(secret: $0, account: email, issuer: "GuestPass") }
            if self.json {
                var object = ["operator_id": id.uuidString.lowercased()]
                object["otpauth_uri"] = uri
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("operator \(id.uuidString.lowercased()) (\(email))")
                if let uri { print("second factor (scan once, then keep it secret): \(uri)") }
            }
        }
    }

    /// `guestpass operators list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the console operators.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            for summary in try await withAdministration(self.database, { try await $0.listOperators() }) {
                let scope = summary.allApps ? "all apps" : summary.apps.joined(separator: ", ")
                print(
                    "\(summary.id.uuidString.lowercased())  \(summary.email)  \(summary.secondFactor ? "totp" : "password only")  \(scope)\(summary.disabled ? "  disabled" : "")"
                )
            }
        }
    }
}
