import Foundation
import GuestPassPostgres
import Hummingbird
import Logging
import Metrics
import NIOConcurrencyHelpers
import Prometheus

/// The service's own counters, through swift-metrics (Prometheus when `guestpass serve` bootstraps it; no-ops in
/// tests). One home for their names and labels; the HTTP metrics (requests by route template and status, latency
/// histograms) come from `RequestMetricsMiddleware`.
enum ServiceMetrics {
    /// Sign-ups by outcome: `created`, `existing` (a known device), `transfer`, `recovery`, `rate_limited`, `refused`.
    static func signUp(_ outcome: String) { self.count("guestpass_signups_total", [("outcome", outcome)]) }
    /// Refreshes by outcome: `rotated`, `already_used`, `session_not_found`, `token_not_found`.
    static func refresh(_ outcome: String) { self.count("guestpass_refreshes_total", [("outcome", outcome)]) }
    /// RPC calls by function and HTTP status (`consume_quota` 200 is a consume, 429 an exhausted quota).
    static func rpc(_ function: String, status: Int) {
        self.count("guestpass_rpc_calls_total", [("function", function), ("status", String(status))])
    }
    /// Welcome grants by outcome.
    static func welcomeGrant(_ outcome: String) { self.count("guestpass_welcome_grants_total", [("outcome", outcome)]) }
    /// Requests refused by a rate limit, by dialect.
    static func rateLimited(_ dialect: String) { self.count("guestpass_rate_limit_denials_total", [("dialect", dialect)]) }
    /// Read-only calls the read replica could not answer, run on the primary instead (reported by the store's
    /// `ReadRouting` through the `onReplicaFallback` callback `buildRouter` gives it).
    static func readReplicaFallback() { self.count("guestpass_read_replica_fallbacks_total", []) }
    /// Database errors by SQLSTATE class (`08`, `23`, `40`, …; `pool` for an acquire timeout, `connection` otherwise).
    static func databaseError(_ sqlStateClass: String) { self.count("guestpass_database_errors_total", [("class", sqlStateClass)]) }

    /// Mail the outbox sender handed to a relay (`MailSender`).
    static func mailSent() { self.count("guestpass_mail_sent_total", []) }
    /// Mail a relay or the sender refused: `final` when it is given up, else it is retried with backoff.
    static func mailFailed(final: Bool) { self.count("guestpass_mail_failed_total", [("final", final ? "true" : "false")]) }
    /// The outbox's depth and the age of its oldest waiting mail (`MailSender` samples them every few seconds).
    static func mailQueue(waiting: Int, oldestAgeSeconds: Double) {
        Gauge(label: "guestpass_mail_queued").record(waiting)
        Gauge(label: "guestpass_mail_oldest_queued_seconds").record(oldestAgeSeconds)
    }

    /// Object bytes stored by uploads and sent by downloads, per backend (`file`, `s3`).
    static func storageBytes(_ direction: String, _ count: Int64, backend: String) {
        self.count("guestpass_storage_bytes_total", [("direction", direction), ("backend", backend)], by: Int(count))
    }
    /// Objects written (`op` upload, copy) and removed, per backend.
    static func storageObjects(_ operation: String, _ count: Int = 1) {
        self.count("guestpass_storage_objects_total", [("op", operation)], by: count)
    }
    /// One backend call: its duration, and an error counter when it failed.
    static func storageBackend(_ operation: String, backend: String, seconds: Double, failed: Bool) {
        Metrics.Timer(label: "guestpass_storage_backend_seconds", dimensions: [("op", operation), ("backend", backend)])
            .recordNanoseconds(Int64(seconds * 1e9))
        if failed { self.count("guestpass_storage_backend_errors_total", [("op", operation), ("backend", backend)]) }
    }
    /// Bytes the sweep deleted keys for (replaced or removed objects' versions, abandoned uploads).
    static func storageSwept(_ keys: Int) { self.count("guestpass_storage_swept_total", [], by: keys) }

    /// The counter of each label and dimensions, made once: a metrics handle costs a registry lookup under a lock
    /// (and allocations) to make, an atomic add to use. Handles are made on first use, after `guestpass serve`
    /// bootstrapped the metrics system.
    private static let counters = NIOLockedValueBox<[String: Metrics.Counter]>([:])

    static func count(_ label: String, _ dimensions: [(String, String)], by amount: Int = 1) {
        // One string for the cache key, grown once (folding `+` over the dimensions made a string a step).
        var key = label
        key.reserveCapacity(label.utf8.count + dimensions.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 2 })
        for (name, value) in dimensions {
            key.append("\u{0}")
            key.append(name)
            key.append("=")
            key.append(value)
        }
        let counter = self.counters.withLockedValue { counters in
            if let existing = counters[key] { return existing }
            let made = Metrics.Counter(label: label, dimensions: dimensions)
            counters[key] = made
            return made
        }
        counter.increment(by: amount)
    }
}

/// The Prometheus listener (`GUESTPASS_METRICS_ADDRESS`, loopback by default): `GET /metrics` in the text format,
/// with each pool's gauges (label `pool`: `primary`, and `read` with a read replica) sampled at each scrape. A
/// listener of its own, so it is never public by accident.
func buildMetricsServer(
    registry: PrometheusCollectorRegistry, pools: [(name: String, pool: PostgresPool)], host: String, port: Int, logger: Logger
) -> some ApplicationProtocol {
    let router = Router()
    let gauges = pools.map { entry in
        let labels = [("pool", entry.name)]
        return (
            pool: entry.pool,
            open: poolGauge(registry, "guestpass_db_pool_open_connections", "Connections the pool holds open", labels),
            inUse: poolGauge(registry, "guestpass_db_pool_in_use_connections", "Connections lent to a request", labels),
            waiting: poolGauge(registry, "guestpass_db_pool_waiters", "Requests waiting for a connection", labels),
            size: poolGauge(registry, "guestpass_db_pool_size", "The most connections the pool opens", labels)
        )
    }
    router.get("/metrics") { _, _ -> Response in
        for gauge in gauges {
            let statistics = await gauge.pool.statistics
            gauge.open.set(Double(statistics.open))
            gauge.inUse.set(Double(statistics.open - statistics.idle))
            gauge.waiting.set(Double(statistics.waiting))
            gauge.size.set(Double(gauge.pool.configuration.maxConnections))
        }
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer()))
        )
    }
    return Application(
        router: router, configuration: .init(address: .hostname(host, port: port), serverName: "guestpass-metrics"), logger: logger
    )
}

/// A gauge of the pool, named as before (no unit suffix) and with its help text.
private func poolGauge(_ registry: PrometheusCollectorRegistry, _ name: String, _ help: String, _ labels: [(String, String)]) -> Prometheus.Gauge {
    registry.makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
}
