import Foundation
import GuestPassJSON
import GuestPassStore
import Hummingbird

/// The audit view: every operator action on the operator's apps, newest first, 50 a page.
struct ConsoleAuditRoutes: Sendable {
    let console: ConsoleServices

    func register(on router: Router<ConsoleRequestContext>) {
        router.get("/audit") { request, _ in try await self.audit(request) }
    }

    private func audit(_ request: Request) async throws -> Response {
        try await self.console.signedIn(request) { caller, _ in
            var view = self.console.base(caller, request)
            let before = request.uri.queryParameters["before"].flatMap { Int64(String($0)) }
            let rows = ConsoleView.list(of: try await self.console.store.audit(session: caller.sessionHash, app: nil, before: before))
            let audit = Self.rows(rows.compactMap { $0 as? [String: Any] })
            view["audit"] = audit
            view["has_audit"] = !audit.isEmpty
            if audit.count == 50, let last = audit.last?["id"] { view["next"] = "\(last)" }
            return self.console.pages.page("audit", view)
        }
    }

    /// Audit rows with their detail, before and after as one line of text each.
    static func rows(_ rows: [[String: Any]]) -> [[String: Any]] {
        rows.map { row in
            var row = row
            var parts: [String] = []
            for key in ["detail", "before", "after"] {
                guard let value = row[key] else { continue }
                parts.append("\(key): \(Self.text(value))")
            }
            row["detail_text"] = parts.joined(separator: "; ")
            return row
        }
    }

    /// A view value as compact text (objects as `{k: v}` in key order).
    static func text(_ value: Any) -> String {
        switch value {
        case let dictionary as [String: Any]:
            "{" + dictionary.keys.sorted().map { "\($0): \(Self.text(dictionary[$0]!))" }.joined(separator: ", ") + "}"
        case let list as [Any]: "[" + list.map(Self.text).joined(separator: ", ") + "]"
        default: "\(value)"
        }
    }
}
