import Foundation
import GuestPassStore
import Hummingbird
import Logging

/// What every console route uses: the store (as `guestpass_console`), the pages, the cookies, the password hasher,
/// the service's history; and the steps every signed-in route takes (find the caller, map the store's refusals).
struct ConsoleServices: Sendable {
    let store: ConsoleStore
    let pages: ConsolePages
    let cookies: ConsoleCookies
    let hasher: PasswordHasher
    let history: ServiceHistory
    /// Revokes a deleted account's Apple tokens, as the user's own deletion does.
    let appleRevoker: AppleTokenRevoker
    /// The exposed schemas whose rows an account deletion removes.
    let schemas: [String]
    let logger: Logger

    /// 303 to the sign-in page.
    static var toSignIn: Response { Response(status: .seeOther, headers: [.location: "/sign-in"]) }

    /// The signed-in caller of `request`, or nil (no cookie, or a session the store no longer knows). With
    /// `pendingSecondFactor`, a session still waiting for its TOTP code counts (the code page); otherwise it does not.
    func caller(_ request: Request, pendingSecondFactor: Bool = false) async throws -> ConsoleCaller? {
        guard let token = ConsoleCookies.value(ConsoleCookies.session, in: request), token.utf8.count <= 64 else { return nil }
        let hash = ConsoleCookies.hash(token)
        let session: ConsoleSessionInfo
        do {
            session = try await self.store.session(hash)
        } catch ConsoleStoreError.notSignedIn {
            return nil
        }
        guard session.secondFactorDone || pendingSecondFactor else { return nil }
        return ConsoleCaller(sessionHash: hash, csrf: ConsoleCookies.csrfToken(forSession: token), email: session.email)
    }

    /// A post without this session's CSRF token: 403, nothing done.
    func csrfRefusal(_ caller: ConsoleCaller) -> Response {
        self.pages.problem(
            .forbidden, heading: "Refused", message: "The form is not from this session (CSRF token missing or wrong); nothing was changed.",
            base: caller.base)
    }

    /// Runs a signed-in page or action: no caller → the sign-in page; a post → its CSRF token checked first; the
    /// store's refusals → 403 (another operator's app), 404, 400 with the store's message; a session that ended
    /// meanwhile → the sign-in page.
    func signedIn(
        _ request: Request, post: Bool = false, _ body: (ConsoleCaller, ConsoleForm?) async throws -> Response
    ) async throws -> Response {
        guard let caller = try await self.caller(request) else { return Self.toSignIn }
        var form: ConsoleForm?
        if post {
            guard let posted = await ConsoleForm.read(request), caller.accepts(posted) else { return self.csrfRefusal(caller) }
            form = posted
        }
        do {
            return try await body(caller, form)
        } catch let error as ConsoleStoreError {
            switch error {
            case .notSignedIn: return Self.toSignIn
            case .forbidden:
                return self.pages.problem(.forbidden, heading: "Not yours", message: "That belongs to an app you do not operate.", base: caller.base)
            case .notFound: return self.pages.problem(.notFound, heading: "Not found", message: "There is no such record.", base: caller.base)
            case .invalid(let message): return self.pages.problem(.badRequest, heading: "Not done", message: message, base: caller.base)
            }
        } catch let error as ConsoleInputError {
            return self.pages.problem(.badRequest, heading: "Not done", message: error.message, base: caller.base)
        }
    }

    /// The page's base view with the notice of `?done=`.
    func base(_ caller: ConsoleCaller, _ request: Request) -> [String: Any] {
        var view = caller.base
        view["notice"] = ConsoleNotice.of(request)?.text
        return view
    }
}

/// A form field the console could not use; its message is shown on a 400 page.
struct ConsoleInputError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

extension ConsoleForm {
    /// The whole number in field `name` within `range`, or a `ConsoleInputError` naming `label`.
    func integer(_ name: String, _ label: String, in range: ClosedRange<Int>) throws -> Int {
        guard let text = self[name]?.trimmingCharacters(in: .whitespaces), let value = Int(text), range.contains(value) else {
            throw ConsoleInputError("\(label) must be a whole number from \(range.lowerBound) to \(range.upperBound).")
        }
        return value
    }
}

extension String {
    /// The UUID this text spells, or nil.
    var consoleUUID: UUID? { UUID(uuidString: self) }
}
