import Foundation
import GuestPassCrypto
import Hummingbird

/// A signed-in console request: the operator's session (its token's hash, what the store functions take) and the
/// values every page's layout shows.
struct ConsoleCaller: Sendable {
    /// The SHA-256 of the session cookie's token: the store resolves the operator from it on every call.
    let sessionHash: String
    /// The session's CSRF token, repeated by every form of its pages.
    let csrf: String
    let email: String

    /// The layout's values: the navigation, the operator, the CSRF token.
    var base: [String: Any] { ["operator": ["email": self.email, "csrf": self.csrf], "csrf": self.csrf] }

    /// Whether `form` carries this session's CSRF token.
    func accepts(_ form: ConsoleForm) -> Bool {
        guard let token = form["csrf"] else { return false }
        return ConstantTime.equals(Array(token.utf8), Array(self.csrf.utf8))
    }
}

/// What a finished action says on the page it returns to (`?done=<name>`): fixed texts, so a link cannot make the
/// console say anything else.
enum ConsoleNotice: String, CaseIterable {
    case credits, premium, device, session, quota, key
    case revokedKey = "revoked-key"
    case deleted

    var text: String {
        switch self {
        case .credits: "Credits changed; the ledger has the new row."
        case .premium: "Premium changed."
        case .device: "Device revoked; its sessions are ended."
        case .session: "Session ended."
        case .quota: "Quota saved; the API applies it from the next request."
        case .key: "Key created."
        case .revokedKey: "Key revoked."
        case .deleted: "Account deleted."
        }
    }

    /// The notice a request's `done` parameter names, if any.
    static func of(_ request: Request) -> ConsoleNotice? {
        request.uri.queryParameters["done"].flatMap { ConsoleNotice(rawValue: String($0)) }
    }
}
