import Foundation
import GuestPassPostgres
import GuestPassStore
import Hummingbird
import ServiceLifecycle

/// The health page: this server's last hour from `ServiceHistory` as SVG charts (requests per second and p99 per
/// route group, error rates, pool connections in use, Realtime sockets) and its last 5xx answers.
struct ConsoleHealthRoutes: Sendable {
    let console: ConsoleServices

    func register(on router: Router<ConsoleRequestContext>) {
        router.get("/health") { request, _ in try await self.health(request) }
    }

    private func health(_ request: Request) async throws -> Response {
        try await self.console.signedIn(request) { caller, _ in
            var view = self.console.base(caller, request)
            let (steps, errors) = self.console.history.snapshot()
            let active = ServiceHistory.groups.filter { group in steps.contains { ($0.rate[group] ?? 0) > 0 } }
            let groups = active.isEmpty ? ["rest"] : active
            func series(_ name: String, _ value: (ServiceHistory.Step) -> Double) -> SVGChart.Series {
                SVGChart.Series(name: name, values: steps.map(value))
            }
            let charts: [(String, String, String, [SVGChart.Series])] = [
                ("requests", "Requests per second", "req/s", groups.map { group in series(group) { $0.rate[group] ?? 0 } }),
                (
                    "errors", "Errors per second", "per s",
                    [series("5xx") { $0.serverErrorRate }, series("4xx") { $0.clientErrorRate }]
                ),
                ("latency", "p99 latency per route group", "ms", groups.map { group in series(group) { $0.p99Milliseconds[group] ?? 0 } }),
                (
                    "pool", "Database connections", "connections",
                    [
                        series("in use") { $0.gauges[ServiceHistorySampler.poolInUse] ?? 0 },
                        series("waiting") { $0.gauges[ServiceHistorySampler.poolWaiting] ?? 0 },
                    ]
                ),
                ("realtime", "Realtime sockets", "sockets", [series("open") { $0.gauges[ServiceHistorySampler.realtimeSockets] ?? 0 }]),
                (
                    "mail", "Mail queue", "mails, seconds",
                    [
                        series("queued") { $0.gauges[ServiceHistorySampler.mailQueued] ?? 0 },
                        series("oldest age (s)") { $0.gauges[ServiceHistorySampler.mailOldestAge] ?? 0 },
                    ]
                ),
            ]
            view["charts"] = charts.map { id, heading, unit, lines in
                ["id": id, "heading": heading, "svg": SVGChart.lines(title: heading, unit: unit, series: lines)] as [String: Any]
            }
            let formatter = ISO8601DateFormatter()
            let rows = errors.map { error -> [String: Any] in
                ["at": formatter.string(from: error.at), "group": error.group, "status": error.status, "code": error.route, "request_id": ""]
            }
            view["errors"] = rows
            view["has_errors"] = !rows.isEmpty
            return self.console.pages.page("health", view)
        }
    }
}

/// Samples the gauges of `ServiceHistory` once per bucket: the pool's connections in use and waiting, the open
/// Realtime sockets, the mail queue (mails not yet sent and the age of the oldest: one query,
/// `guestpass_server.mail_queue_state`). A service of the API application (it stops with it).
struct ServiceHistorySampler: Service {
    static let poolInUse = "pool_in_use"
    static let poolWaiting = "pool_waiting"
    static let realtimeSockets = "realtime_sockets"
    static let mailQueued = "mail_queued"
    static let mailOldestAge = "mail_oldest_age"

    let history: ServiceHistory
    let pool: PostgresPool
    let sockets: @Sendable () -> Int

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let statistics = await self.pool.statistics
            self.history.sample(Self.poolInUse, Double(statistics.open - statistics.idle))
            self.history.sample(Self.poolWaiting, Double(statistics.waiting))
            self.history.sample(Self.realtimeSockets, Double(self.sockets()))
            if let mail = try? await MailOutbox(pool: self.pool).state() {
                self.history.sample(Self.mailQueued, Double(mail.queued))
                self.history.sample(Self.mailOldestAge, mail.oldestAgeSeconds)
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(ServiceHistory.bucketSeconds)) }
        }
    }
}
