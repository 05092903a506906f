import Foundation
import GuestPassPostgres
import GuestPassStore
import Logging
import Hummingbird

/// Users: found by an exact id, device id, email, share code or Apple subject (indexed look-ups, only the operator's
/// apps); a user's page (identities, devices, sessions, today's quota, the ledger, premium, the welcome grant,
/// partners, pending codes, the operator actions on them); actions on it, each audited in its own transaction.
struct ConsoleUserRoutes: Sendable {
    let console: ConsoleServices

    /// The search kinds, as the form offers them.
    static let kinds: [(value: String, label: String)] = [
        ("device_id", "Device id"), ("user_id", "User id"), ("email", "Email"), ("share_code", "Share code"), ("apple_subject", "Apple subject"),
    ]

    func register(on router: Router<ConsoleRequestContext>) {
        router.get("/users") { request, _ in try await self.search(request) }
        router.get("/users/:user") { request, context in try await self.user(request, context) }
        router.post("/users/:user/credits") { request, context in try await self.changeCredits(request, context) }
        router.post("/users/:user/premium") { request, context in try await self.setPremium(request, context) }
        router.post("/users/:user/devices/:device/revoke") { request, context in try await self.revokeDevice(request, context) }
        router.post("/users/:user/sessions/:session/end") { request, context in try await self.endSession(request, context) }
        router.post("/users/:user/delete") { request, context in try await self.delete(request, context) }
    }

    private func search(_ request: Request) async throws -> Response {
        try await self.console.signedIn(request) { caller, _ in
            var view = self.console.base(caller, request)
            let kind = request.uri.queryParameters["kind"].map(String.init) ?? "device_id"
            let value = (request.uri.queryParameters["value"].map(String.init) ?? "").trimmingCharacters(in: .whitespaces)
            view["kinds"] = Self.kinds.map { ["value": $0.value, "label": $0.label, "selected": $0.value == kind] as [String: Any] }
            view["value"] = value
            guard !value.isEmpty else { return self.console.pages.page("search", view) }
            guard let label = Self.kinds.first(where: { $0.value == kind })?.label else {
                throw ConsoleInputError("Choose what to find the user by.")
            }
            guard value.utf8.count <= 320 else { throw ConsoleInputError("That value is too long.") }
            let users = ConsoleView.list(of: try await self.console.store.findUsers(session: caller.sessionHash, kind: kind, value: value))
            view["searched"] = true
            view["kind_label"] = label
            view["users"] = users
            view["has_users"] = !users.isEmpty
            return self.console.pages.page("search", view)
        }
    }

    private func userID(_ context: ConsoleRequestContext) throws -> UUID {
        guard let id = context.parameters.get("user")?.consoleUUID else { throw ConsoleStoreError.notFound }
        return id
    }

    private func user(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        try await self.console.signedIn(request) { caller, _ in
            let id = try self.userID(context)
            var view = self.console.base(caller, request)
            for (key, value) in ConsoleView.object(of: try await self.console.store.userPage(session: caller.sessionHash, user: id)) {
                view[key] = value
            }
            view["user_id"] = id.uuidString.lowercased()
            for list in ["ledger", "devices", "sessions", "audit"] {
                view["has_\(list)"] = !((view[list] as? [Any]) ?? []).isEmpty
            }
            if let audit = view["audit"] as? [[String: Any]] { view["audit"] = ConsoleAuditRoutes.rows(audit) }
            return self.console.pages.page("user", view)
        }
    }

    private func done(_ user: UUID, _ notice: ConsoleNotice) -> Response {
        Response(status: .seeOther, headers: [.location: "/users/\(user.uuidString.lowercased())?done=\(notice.rawValue)"])
    }

    private func changeCredits(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        try await self.console.signedIn(request, post: true) { caller, form in
            let id = try self.userID(context)
            let delta = try form!.integer("delta", "The credits", in: -1_000_000...1_000_000)
            guard delta != 0 else { throw ConsoleInputError("The credits must not be 0.") }
            let reason = (form!["reason"] ?? "").trimmingCharacters(in: .whitespaces)
            guard (1...200).contains(reason.count) else { throw ConsoleInputError("Give a reason of 1 to 200 characters.") }
            _ = try await self.console.store.changeCredits(session: caller.sessionHash, user: id, delta: delta, reason: reason)
            return self.done(id, .credits)
        }
    }

    private func setPremium(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        try await self.console.signedIn(request, post: true) { caller, form in
            let id = try self.userID(context)
            guard let choice = form!["premium"], choice == "on" || choice == "off" else { throw ConsoleInputError("Premium is on or off.") }
            try await self.console.store.setPremium(session: caller.sessionHash, user: id, premium: choice == "on")
            return self.done(id, .premium)
        }
    }

    private func revokeDevice(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        try await self.console.signedIn(request, post: true) { caller, _ in
            let id = try self.userID(context)
            guard let device = context.parameters.get("device")?.consoleUUID else { throw ConsoleStoreError.notFound }
            try await self.console.store.revokeDevice(session: caller.sessionHash, user: id, device: device)
            return self.done(id, .device)
        }
    }

    private func endSession(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        try await self.console.signedIn(request, post: true) { caller, _ in
            let id = try self.userID(context)
            guard let session = context.parameters.get("session")?.consoleUUID else { throw ConsoleStoreError.notFound }
            try await self.console.store.endSession(session: caller.sessionHash, user: id, sessionID: session)
            return self.done(id, .session)
        }
    }

    /// The account deleted as the user's own deletion deletes it, then its Apple tokens revoked; the form must repeat
    /// the user id.
    private func delete(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        try await self.console.signedIn(request, post: true) { caller, form in
            let id = try self.userID(context)
            guard form!["confirm"]?.trimmingCharacters(in: .whitespaces).lowercased() == id.uuidString.lowercased() else {
                throw ConsoleInputError("Type the user id to confirm the deletion.")
            }
            let (app, tokens) = try await self.console.store.deleteUser(session: caller.sessionHash, user: id, schemas: self.console.schemas)
            let revoked = try await self.console.appleRevoker.revoke(tokens, app: app, as: .apiKey(.anon, app: app))
            self.console.logger.info("console: account deleted", metadata: ["user_id": "\(id)", "apple_tokens_revoked": "\(revoked)"])
            return Response(status: .seeOther, headers: [.location: "/users?done=\(ConsoleNotice.deleted.rawValue)"])
        }
    }
}
