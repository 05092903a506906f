import Foundation
import GuestPassStore
import Hummingbird

/// Apps: the operator's apps with their counts; one app's settings, quota (editable), API keys (create: the new key
/// shown once, only its hash stored; revoke).
struct ConsoleAppRoutes: Sendable {
    let console: ConsoleServices

    func register(on router: Router<ConsoleRequestContext>) {
        router.get("/") { _, _ in Response(status: .seeOther, headers: [.location: "/apps"]) }
        router.get("/apps") { request, _ in try await self.apps(request) }
        router.get("/apps/:app") { request, context in try await self.app(request, context) }
        router.post("/apps/:app/quota") { request, context in try await self.setQuota(request, context) }
        router.post("/apps/:app/keys") { request, context in try await self.createKey(request, context) }
        router.post("/apps/:app/keys/:key/revoke") { request, context in try await self.revokeKey(request, context) }
    }

    private func apps(_ request: Request) async throws -> Response {
        try await self.console.signedIn(request) { caller, _ in
            var view = self.console.base(caller, request)
            let apps = ConsoleView.list(of: try await self.console.store.apps(session: caller.sessionHash))
            view["apps"] = apps
            view["has_apps"] = !apps.isEmpty
            return self.console.pages.page("apps", view)
        }
    }

    private func appID(_ context: ConsoleRequestContext) throws -> UUID {
        guard let id = context.parameters.get("app")?.consoleUUID else { throw ConsoleStoreError.notFound }
        return id
    }

    private func app(_ request: Request, _ context: ConsoleRequestContext, newKey: APIKey? = nil) async throws -> Response {
        try await self.console.signedIn(request) { caller, _ in
            try await self.appPage(caller, request, try self.appID(context), newKey: newKey)
        }
    }

    private func appPage(_ caller: ConsoleCaller, _ request: Request, _ id: UUID, newKey: APIKey? = nil) async throws -> Response {
        var view = self.console.base(caller, request)
        let page = ConsoleView.object(of: try await self.console.store.app(session: caller.sessionHash, app: id))
        view["app"] = page
        view["app_id"] = id.uuidString.lowercased()
        view["keys"] = page["keys"] ?? [Any]()
        let settings = (page["settings"] as? [String: Any]) ?? [:]
        view["settings"] = settings.keys.sorted().map { key -> [String: Any] in
            let value = settings[key].map(ConsoleAuditRoutes.text) ?? ""
            return ["name": key.replacingOccurrences(of: "_", with: " "), "value": value]
        }
        if let newKey { view["new_key"] = ["kind": newKey.kind.rawValue, "value": newKey.value] }
        return self.console.pages.page("app", view)
    }

    private func setQuota(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        try await self.console.signedIn(request, post: true) { caller, form in
            let id = try self.appID(context)
            let daily = try form!.integer("daily_free_allowance", "Free readings per day", in: 0...1_000_000)
            let welcome = try form!.integer("welcome_grant_credits", "The welcome grant", in: 0...1_000_000)
            try await self.console.store.setAppQuota(session: caller.sessionHash, app: id, dailyFreeAllowance: daily, welcomeGrantCredits: welcome)
            return Response(status: .seeOther, headers: [.location: "/apps/\(id.uuidString.lowercased())?done=\(ConsoleNotice.quota.rawValue)"])
        }
    }

    /// A new key is shown on this response only (not a redirect: its text must not sit in a URL or a later page).
    private func createKey(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        try await self.console.signedIn(request, post: true) { caller, form in
            let id = try self.appID(context)
            guard let kind = form!["kind"].flatMap(APIKey.Kind.init(rawValue:)) else { throw ConsoleInputError("Choose publishable or secret.") }
            let key = try APIKey.generate(kind: kind)
            try await self.console.store.addKey(session: caller.sessionHash, app: id, key: key)
            return try await self.appPage(caller, request, id, newKey: key)
        }
    }

    private func revokeKey(_ request: Request, _ context: ConsoleRequestContext) async throws -> Response {
        try await self.console.signedIn(request, post: true) { caller, _ in
            let id = try self.appID(context)
            guard let key = context.parameters.get("key")?.consoleUUID else { throw ConsoleStoreError.notFound }
            try await self.console.store.revokeKey(session: caller.sessionHash, app: id, key: key)
            return Response(status: .seeOther, headers: [.location: "/apps/\(id.uuidString.lowercased())?done=\(ConsoleNotice.revokedKey.rawValue)"])
        }
    }
}
