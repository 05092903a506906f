import GuestPassPostgres
import Hummingbird

/// `GET /health/live` (the process answers) and `GET /health/ready` (a database round trip succeeds).
struct HealthRoutes: Sendable {
    let functions: ServerFunctions

    struct Status: ResponseEncodable {
        let status: String
    }

    func register(on router: Router<AppRequestContext>) {
        router.get("/health/live") { _, _ in Status(status: "ok") }
        router.get("/health/ready") { _, context -> EditedResponse<Status> in
            do {
                try await self.functions.ping()
                return EditedResponse(status: .ok, response: Status(status: "ok"))
            } catch {
                context.logger.warning("readiness check failed", metadata: ["db.error": "\(error)"])
                return EditedResponse(status: .serviceUnavailable, response: Status(status: "unavailable"))
            }
        }
    }
}
