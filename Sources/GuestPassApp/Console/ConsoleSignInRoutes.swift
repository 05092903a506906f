import Foundation
import GuestPassCrypto
import GuestPassStore
import Hummingbird

/// Signing in and out: email and password (the users' KDF, on the hashing threads), then a TOTP code when the
/// operator has a second factor; a session cookie (`ConsoleCookies`) once both passed.
///
/// Failed attempts count per email and per client address in SQL (`guestpass_console.sign_in_lookup` refuses past the
/// limit before any password is checked); an unknown email costs one dummy verification, as a known one does, so the
/// answer's timing does not tell them apart. Wrong codes count as failed sign-ins too, and a code is good once: the
/// operator's last used step is kept, and a code of that step or an earlier one is refused.
struct ConsoleSignInRoutes: Sendable {
    let console: ConsoleServices

    func register(on router: Router<ConsoleRequestContext>) {
        router.get("/sign-in") { request, _ in try self.signInPage(request) }
        router.post("/sign-in") { request, context in try await self.signIn(request, context) }
        router.get("/sign-in/code") { request, context in try await self.codePage(request, context) }
        router.post("/sign-in/code") { request, context in try await self.verifyCode(request, context) }
        router.post("/sign-out") { request, context in try await self.signOut(request, context) }
    }

    private func signInPage(_ request: Request, email: String = "", problem: String? = nil, status: HTTPResponse.Status = .ok) throws -> Response {
        let pre = try ConsoleCookies.newToken()
        var view: [String: Any] = ["pre": pre, "email": email]
        view["problem"] = problem
        var response = self.console.pages.page("sign_in", view, status: status)
        response.headers[.setCookie] = self.console.cookies.setCookie(ConsoleCookies.preSession, pre, seconds: 1800)
        return response
    }

    private func signIn(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        guard let form = await ConsoleForm.read(request) else {
            return try self.signInPage(request, problem: "The form could not be read.", status: .badRequest)
        }
        guard let pre = ConsoleCookies.value(ConsoleCookies.preSession, in: request), let posted = form["pre"],
            ConstantTime.equals(Array(pre.utf8), Array(posted.utf8))
        else { return try self.signInPage(request, problem: "The sign-in form expired; try again.", status: .forbidden) }
        let email = (form["email"] ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        let password = form["password"] ?? ""
        guard !email.isEmpty, email.utf8.count <= 320, !password.isEmpty, password.utf8.count <= 1024 else {
            return try self.signInPage(request, email: email, problem: "Enter your email and password.", status: .badRequest)
        }
        let lookup = try await self.console.store.signInLookup(email: email, address: context.clientAddress)
        if lookup.limited {
            return try self.signInPage(request, email: email, problem: "Too many failed sign-ins; wait 15 minutes.", status: .tooManyRequests)
        }
        guard let operatorID = lookup.operatorID, let stored = lookup.passwordHash else {
            try await self.console.hasher.verifyDummy(password)
            try await self.console.store.signInFailed(email: email, address: context.clientAddress)
            return try self.signInPage(request, email: email, problem: "Wrong email or password.", status: .unauthorized)
        }
        guard case .match = try await self.console.hasher.verify(password, against: stored) else {
            try await self.console.store.signInFailed(email: email, address: context.clientAddress)
            return try self.signInPage(request, email: email, problem: "Wrong email or password.", status: .unauthorized)
        }
        if lookup.totpRequired && lookup.totpSecret == nil {
            return try self.signInPage(
                request, email: email, problem: "This operator must have a second factor: ask for a new one (guestpass operators create --totp).",
                status: .forbidden)
        }
        let token = try ConsoleCookies.newToken()
        let needsCode = lookup.totpSecret != nil
        try await self.console.store.signInSucceeded(
            operatorID: operatorID, tokenHash: ConsoleCookies.hash(token), secondFactorDone: !needsCode)
        var response = Response(status: .seeOther, headers: [.location: needsCode ? "/sign-in/code" : "/apps"])
        response.headers[values: .setCookie] = [
            self.console.cookies.setCookie(ConsoleCookies.session, token, seconds: ConsoleCookies.sessionSeconds),
            self.console.cookies.setCookie(ConsoleCookies.preSession, "", seconds: 0),
        ]
        return response
    }

    private func codePage(_ request: Request, _ context: ConsoleRequestContext, problem: String? = nil, status: HTTPResponse.Status = .ok)
        async throws -> Response
    {
        guard let caller = try await self.console.caller(request, pendingSecondFactor: true) else { return ConsoleServices.toSignIn }
        var view = ["csrf": caller.csrf] as [String: Any]
        view["problem"] = problem
        return self.console.pages.page("second_factor", view, status: status)
    }

    private func verifyCode(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        guard let caller = try await self.console.caller(request, pendingSecondFactor: true) else { return ConsoleServices.toSignIn }
        guard let form = await ConsoleForm.read(request), caller.accepts(form) else { return self.console.csrfRefusal(caller) }
        let lookup = try await self.console.store.signInLookup(email: caller.email, address: context.clientAddress)
        if lookup.limited {
            return try await self.codePage(request, context, problem: "Too many failed attempts; wait 15 minutes.", status: .tooManyRequests)
        }
        guard let secret = lookup.totpSecret, let step = TOTP.matchingStep(form["code"] ?? "", secret: secret, at: Date()),
            try await self.console.store.secondFactorDone(session: caller.sessionHash, step: step)
        else {
            try await self.console.store.signInFailed(email: caller.email, address: context.clientAddress)
            return try await self.codePage(request, context, problem: "That code is not the current one, or was used already.", status: .unauthorized)
        }
        return Response(status: .seeOther, headers: [.location: "/apps"])
    }

    private func signOut(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        guard let caller = try await self.console.caller(request, pendingSecondFactor: true) else { return ConsoleServices.toSignIn }
        guard let form = await ConsoleForm.read(request), caller.accepts(form) else { return self.console.csrfRefusal(caller) }
        try await self.console.store.signOut(session: caller.sessionHash)
        var response = ConsoleServices.toSignIn
        response.headers[.setCookie] = self.console.cookies.setCookie(ConsoleCookies.session, "", seconds: 0)
        return response
    }
}
