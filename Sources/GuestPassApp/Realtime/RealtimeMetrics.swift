import Metrics
import NIOConcurrencyHelpers

/// Realtime's metrics (beside `ServiceMetrics`, through the same swift-metrics system): sockets and channels open,
/// changes captured, delivered and dropped, polls and their duration (the lag a change can add before delivery), and
/// refusals by limit.
enum RealtimeMetrics {
    private static let sockets = Gauge(label: "guestpass_realtime_sockets")
    private static let channels = Gauge(label: "guestpass_realtime_channels")
    private static let pollDuration = Metrics.Timer(label: "guestpass_realtime_poll_duration_seconds", preferredDisplayUnit: .seconds)
    private static let open = NIOLockedValueBox((sockets: 0, channels: 0))

    /// A socket was upgraded, or closed.
    static func socketOpened() {
        self.sockets.record(
            self.open.withLockedValue {
                $0.sockets += 1
                return $0.sockets
            })
    }
    static func socketClosed() {
        self.sockets.record(
            self.open.withLockedValue {
                $0.sockets -= 1
                return $0.sockets
            })
    }

    /// A channel was joined, or ended (`leave`, `shutdown`, `socket`).
    static func channelOpened() {
        self.channels.record(
            self.open.withLockedValue {
                $0.channels += 1
                return $0.channels
            })
    }
    static func channelClosed(reason: String) {
        self.channels.record(
            self.open.withLockedValue {
                $0.channels -= 1
                return $0.channels
            })
        ServiceMetrics.count("guestpass_realtime_channels_closed_total", [("reason", reason)])
    }

    /// One poll of the change log: how many rows it returned and how long it took.
    static func polled(changes: Int, seconds: Duration) {
        self.pollDuration.recordNanoseconds(seconds.components.seconds * 1_000_000_000 + seconds.components.attoseconds / 1_000_000_000)
        ServiceMetrics.count("guestpass_realtime_log_rows_total", [], by: changes)
    }
    static func pollFailed() { ServiceMetrics.count("guestpass_realtime_poll_failures_total", []) }

    /// Row changes captured (seen by this replica's feed), events delivered to channels, and events dropped (a
    /// failed check, a full queue).
    static func captured(_ count: Int) { ServiceMetrics.count("guestpass_realtime_changes_captured_total", [], by: count) }
    static func delivered() { ServiceMetrics.count("guestpass_realtime_changes_delivered_total", []) }
    static func dropped(_ count: Int) { ServiceMetrics.count("guestpass_realtime_changes_dropped_total", [], by: count) }
    static func broadcastSent() { ServiceMetrics.count("guestpass_realtime_broadcasts_total", []) }

    /// Something refused by a limit or a check (`join`, `channels_per_socket`, `messages_per_second`, …).
    static func refused(_ limit: String) { ServiceMetrics.count("guestpass_realtime_refusals_total", [("limit", limit)]) }
}
