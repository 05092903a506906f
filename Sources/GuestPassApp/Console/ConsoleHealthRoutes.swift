import Foundation
import Hummingbird

/// The health page: this server's last hour from `ServiceHistory` as SVG charts (requests per second and p99 per
/// route group, error rates, pool connections open, idle and waiting, Realtime sockets, the mail queue) and its last
/// 5xx answers.
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
                        series("open") { $0.gauges[ServiceHistorySampler.poolOpen] ?? 0 },
                        series("idle") { $0.gauges[ServiceHistorySampler.poolIdle] ?? 0 },
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
                [
                    "at": formatter.string(from: error.at), "group": error.group, "status": error.status, "route": error.route,
                    "code": error.code ?? "", "request_id": error.requestID ?? "",
                ]
            }
            view["errors"] = rows
            view["has_errors"] = !rows.isEmpty
            return self.console.pages.page("health", view)
        }
    }
}
