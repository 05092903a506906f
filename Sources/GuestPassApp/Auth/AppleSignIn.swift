import Foundation
import GuestPassApple
import GuestPassPostgres
import Logging
import NIOConcurrencyHelpers

/// An app's Sign in with Apple settings, as `guestpass_server.app_apple_settings()` returns them.
struct AppleSettings: Sendable {
    /// Apple's own host, when the app names none.
    static let appleBaseURL = "https://appleid.apple.com"

    /// The audiences (bundle ids, Services ids) the app's tokens may name; empty = Sign in with Apple is off.
    let audiences: Set<String>
    let baseURL: String

    init(row: PostgresRow) throws {
        let audiences = try row.decode(String.self, "audiences")
        self.audiences = Set(PostgresTextArray.elements(audiences))
        self.baseURL = try row.decode(String?.self, "base_url") ?? Self.appleBaseURL
    }
}

/// One `AppleIdentityVerifier` (with its key cache) per Apple base URL, created on first use: every app on Apple's
/// own host shares one cache of Apple's keys.
final class AppleVerifiers: Sendable {
    private let verifiers = NIOLockedValueBox([String: AppleIdentityVerifier]())
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    func verifier(baseURL: String) -> AppleIdentityVerifier {
        self.verifiers.withLockedValue { verifiers in
            if let verifier = verifiers[baseURL] { return verifier }
            let verifier = AppleIdentityVerifier(keys: AppleKeyStore(baseURL: baseURL, logger: self.logger))
            verifiers[baseURL] = verifier
            return verifier
        }
    }
}

/// PostgreSQL's text form of a one-dimensional `text[]` whose elements need no quoting or were quoted by PostgreSQL.
enum PostgresTextArray {
    /// The elements of `{a,b,"c d"}`.
    static func elements(_ text: String) -> [String] {
        guard text.count >= 2, text.first == "{", text.last == "}" else { return [] }
        var elements: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in text.dropFirst().dropLast() {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == "," && !quoted {
                elements.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty || !elements.isEmpty { elements.append(current) }
        return elements
    }

    /// `{"a","b"}`: the text form of `elements`, each quoted.
    static func literal(_ elements: [String]) -> String {
        let quoted = elements.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        return "{" + quoted.joined(separator: ",") + "}"
    }
}
