import GuestPassJSON
import GuestPassPostgres

/// An app's Sign in with Apple settings, as `guestpass_server.app_apple_settings()` returns them
/// (`ServerFunctions.appleSettings(as:)`); GuestPassApp picks Apple's verifier and key client by them.
public struct AppleSettings: Sendable {
    /// Apple's own host, when the app names none.
    public static let appleBaseURL = "https://appleid.apple.com"

    /// The audiences (bundle ids, Services ids) the app's tokens may name; empty = Sign in with Apple is off.
    public let audiences: Set<String>
    public let baseURL: String
    /// The app's Sign in with Apple key, for the code exchange and revocation; nil when not configured.
    public let key: KeySettings?

    public struct KeySettings: Hashable, Sendable {
        public let baseURL: String
        public let teamID: String
        public let keyID: String
        public let keyPath: String
    }

    init(row: PostgresRow) throws {
        guard case .array(let audiences) = try JSONValue.parse(try row.decode(PostgresJSON.self, "audiences").text) else {
            throw PostgresError(.decoding, message: "app_apple_settings: audiences is not an array")
        }
        self.audiences = Set(audiences.compactMap(\.stringValue))
        self.baseURL = try row.decode(String?.self, "base_url") ?? Self.appleBaseURL
        if let team = try row.decode(String?.self, "team_id"), let key = try row.decode(String?.self, "key_id"),
            let path = try row.decode(String?.self, "key_path")
        {
            self.key = KeySettings(baseURL: self.baseURL, teamID: team, keyID: key, keyPath: path)
        } else {
            self.key = nil
        }
    }
}
