import ArgumentParser
import Foundation
import GuestPassCrypto
import GuestPassPostgres

/// `guestpass apps create`: registers an app (a tenant) and prints its two API keys once.
struct AppsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps", abstract: "Manage apps and their API keys.", subcommands: [Create.self]
    )

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
            var configuration = PostgresConfiguration(url: try self.database.resolvedURL())
            configuration.maxConnections = 1
            configuration.applicationName = "guestpass-apps"
            let pool = PostgresPool(configuration: configuration)
            let publishable = APIKey.generate(kind: .publishable)
            let secret = APIKey.generate(kind: .secret)
            let name = self.name
            let appID: UUID = try await pool.withConnection { connection in
                try await connection.run { connection in
                    try connection.transaction { connection in
                        let id: UUID = try connection.execute(
                            "INSERT INTO guestpass.apps (name) VALUES ($1) RETURNING id", [name]
                        ).rows[0].decode(at: 0)
                        for key in [publishable, secret] {
                            try connection.execute(
                                "INSERT INTO guestpass.api_keys (app_id, kind, key_hash, key_prefix) VALUES ($1, $2, $3, $4)",
                                [id, key.kind.rawValue, key.hash, key.prefix]
                            )
                        }
                        return id
                    }
                }
            }
            await pool.shutdown()
            if self.json {
                let object = ["app_id": appID.uuidString.lowercased(), "name": name, "publishable_key": publishable.value, "secret_key": secret.value]
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

/// A freshly generated API key: its value (shown once), its SHA-256 hash (stored) and a short prefix (for display).
struct APIKey {
    enum Kind: String {
        case publishable
        case secret
    }

    let kind: Kind
    let value: String

    static func generate(kind: Kind) -> APIKey {
        var generator = SystemRandomNumberGenerator()  // getrandom(2): cryptographically secure
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let tag = kind == .publishable ? "gp_pub_" : "gp_sec_"
        return APIKey(kind: kind, value: tag + Digest.hex(bytes))
    }

    var hash: String { Digest.sha256Hex(self.value) }
    var prefix: String { String(self.value.prefix(12)) }
}
