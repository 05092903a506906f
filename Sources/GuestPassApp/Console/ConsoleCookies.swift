import Foundation
import GuestPassCrypto
import Hummingbird

/// The console's cookies and the tokens behind them.
///
/// - The session cookie (`gp_console`) holds 32 random bytes (base64url); the database keeps only their SHA-256, so
///   a table read cannot sign anyone in. HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
///   it), Path=/, Secure when the console's public address is https, and no longer-lived than the session (12 h).
/// - Every form of a signed-in page carries the session's CSRF token, derived from the session token (SHA-256 of a
///   label and the token), so it is as unguessable as the cookie and needs no storage of its own; a post whose token
///   does not match is refused before anything happens.
/// - The sign-in form, before any session, is protected the same way by a short-lived pre-session cookie
///   (`gp_console_pre`) whose value the form repeats (double submit).
struct ConsoleCookies: Sendable {
    static let session = "gp_console"
    static let preSession = "gp_console_pre"
    static let sessionSeconds = 12 * 3600
    let secure: Bool

    /// A new random token (32 bytes, base64url).
    static func newToken() throws -> String { Base64URL.encode(try SecureRandom.bytes(32)) }

    /// What the database keeps of a token: its lowercase hex SHA-256.
    static func hash(_ token: String) -> String { Digest.sha256Hex(token) }

    /// The CSRF token of the session whose cookie token is `token`.
    static func csrfToken(forSession token: String) -> String {
        Base64URL.encode(Digest.sha256(Array("guestpass-console-csrf:\(token)".utf8)))
    }

    /// The value of cookie `name` in `request`, if it is there once and non-empty.
    static func value(_ name: String, in request: Request) -> String? {
        for field in request.headers[values: .cookie] {
            for pair in field.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name else { continue }
                let value = parts[1].trimmingCharacters(in: .whitespaces)
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }

    /// `Set-Cookie` for `name` = `value`, living `seconds` (0 deletes it).
    func setCookie(_ name: String, _ value: String, seconds: Int) -> String {
        "\(name)=\(value); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(seconds)\(self.secure ? "; Secure" : "")"
    }
}
