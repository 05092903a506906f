import GuestPassPostgres
import Hummingbird
import Logging
import GuestPassStore

/// `GET /health/live` (the process answers) and `GET /health/ready` (a database round trip succeeds, and the server is
/// not draining for a shutdown).
struct HealthRoutes: Sendable {
    let functions: ServerFunctions
    let readiness: ReadinessGate

    struct Status: ResponseEncodable {
        let status: String
    }

    func register(on router: Router<AppRequestContext>) {
        router.get("/health/live") { _, _ in Status(status: "ok") }
        router.get("/health/ready") { _, context -> EditedResponse<Status> in
            if self.readiness.isDraining {
                return EditedResponse(status: .serviceUnavailable, response: Status(status: "shutting_down"))
            }
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
