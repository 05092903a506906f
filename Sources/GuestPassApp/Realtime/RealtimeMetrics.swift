import Foundation
import Metrics

/// Realtime's metrics (beside `ServiceMetrics`, through the same swift-metrics system): sockets and channels open,
/// changes captured, delivered and dropped, polls and their duration (the lag a change can add before delivery), and
/// refusals by limit.
enum RealtimeMetrics {
    private static let sockets = Gauge(label: "guestpass_realtime_sockets")
    private static let channels = Gauge(label: "guestpass_realtime_channels")
    private static let pollDuration = Metrics.Timer(label: "guestpass_realtime_poll_duration_seconds", preferredDisplayUnit: .seconds)
    private static let pollLag = Metrics.Timer(label: "guestpass_realtime_poll_lag_seconds", preferredDisplayUnit: .seconds)

    /// The sockets and channels open now: `RealtimeHub`'s own counts, recorded by the hub whenever they change.
    static func open(sockets: Int, channels: Int) {
        self.sockets.record(sockets)
        self.channels.record(channels)
    }

    /// Channels that ended, by why: `leave` (the client's), `rejoin` (joined again on the same topic), `shutdown`
    /// (the server's: an expired token, a revoked session), `socket` (the socket closed).
    static func channelsClosed(_ count: Int, reason: String) {
        guard count > 0 else { return }
        ServiceMetrics.count("guestpass_realtime_channels_closed_total", [("reason", reason)], by: count)
    }

    /// One poll of the change log: how many rows it returned and how long it took.
    static func polled(changes: Int, seconds: Duration) {
        self.pollDuration.recordNanoseconds(seconds.components.seconds * 1_000_000_000 + seconds.components.attoseconds / 1_000_000_000)
        ServiceMetrics.count("guestpass_realtime_log_rows_total", [], by: changes)
    }
    /// How long the oldest change of a poll waited in the log (capture to poll): the delay Realtime adds before the
    /// visibility check and the socket write.
    static func pollLag(oldestCapturedAt commitTimestamp: String) {
        guard let captured = Self.seconds(since1970: commitTimestamp) else { return }
        let lag = max(0, Date().timeIntervalSince1970 - captured)
        self.pollLag.recordNanoseconds(Int64(lag * 1_000_000_000))
    }

    /// `2026-11-25T09:31:43.039Z` (Realtime's `commit_timestamp`) as seconds since 1970, or nil.
    static func seconds(since1970 text: String) -> Double? {
        let bytes = Array(text.utf8)
        guard bytes.count == 24, bytes[4] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"), bytes[19] == UInt8(ascii: "."),
            bytes[23] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), let millisecond = number(20..<23), (1...12).contains(month)
        else { return nil }
        // Days since 1970-01-01 (the proleptic Gregorian calendar; Howard Hinnant's days_from_civil).
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Double(days * 86_400 + hour * 3_600 + minute * 60 + second) + Double(millisecond) / 1_000
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
