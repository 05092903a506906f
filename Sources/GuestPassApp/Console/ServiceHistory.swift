public import Foundation
import NIOConcurrencyHelpers

/// The server's own measurements over the last hour, kept in memory for the console's health page: no Prometheus
/// needed to look. 360 buckets of 10 seconds (a ring); per route group (`auth`, `rpc`, `rest`, `realtime`, `storage`,
/// `health`, `other`) each bucket counts requests, 4xx and 5xx answers and their latencies in 26 power-of-two buckets
/// of microseconds (so a p99 is within a factor of two); gauges (pool connections in use, Realtime sockets) are
/// sampled once per bucket by `ServiceHistorySampler`. The last 50 5xx answers are kept with their route.
///
/// One lock; a request costs one dictionary update under it. A restart starts the history anew; each replica has its own.
public final class ServiceHistory: Sendable {
    public static let bucketSeconds = 10
    public static let bucketCount = 360
    static let latencyBuckets = 26

    /// The route groups, in the order the page shows them.
    public static let groups = ["auth", "rpc", "rest", "realtime", "storage", "health", "other"]

    struct GroupCounts {
        var requests = 0
        var clientErrors = 0
        var serverErrors = 0
        var latency = [Int](repeating: 0, count: ServiceHistory.latencyBuckets)
    }

    struct Bucket {
        var start: Int = -1
        var groups: [String: GroupCounts] = [:]
        var gauges: [String: Double] = [:]
    }

    /// A 5xx answer.
    public struct ServerError: Sendable, Equatable {
        public let at: Date
        public let group: String
        public let route: String
        public let status: Int
    }

    struct State {
        var buckets = [Bucket](repeating: Bucket(), count: ServiceHistory.bucketCount)
        var errors: [ServerError] = []
    }

    private let state = NIOLockedValueBox(State())
    private let clock: @Sendable () -> Date

    /// A history reading time from `clock` (tests pass their own).
    public init(clock: @escaping @Sendable () -> Date = { Date() }) {
        self.clock = clock
    }

    /// The group of a request path.
    public static func group(ofPath path: String) -> String {
        if path.hasPrefix("/auth/") { return "auth" }
        if path.hasPrefix("/rest/v1/rpc/") { return "rpc" }
        if path.hasPrefix("/rest/") { return "rest" }
        if path.hasPrefix("/realtime/") { return "realtime" }
        if path.hasPrefix("/storage/") { return "storage" }
        if path.hasPrefix("/health") { return "health" }
        return "other"
    }

    /// Counts one answered request.
    public func record(path: String, route: String, status: Int, nanoseconds: UInt64) {
        let now = self.clock()
        let group = Self.group(ofPath: path)
        let micros = max(1, nanoseconds / 1000)
        let slot = min(Self.latencyBuckets - 1, 64 - micros.leadingZeroBitCount - 1)
        self.state.withLockedValue { state in
            Self.withBucket(&state, at: now) { bucket in
                var counts = bucket.groups[group] ?? GroupCounts()
                counts.requests += 1
                if (400..<500).contains(status) { counts.clientErrors += 1 }
                if status >= 500 { counts.serverErrors += 1 }
                counts.latency[slot] += 1
                bucket.groups[group] = counts
            }
            if status >= 500 {
                state.errors.append(ServerError(at: now, group: group, route: route, status: status))
                if state.errors.count > 50 { state.errors.removeFirst(state.errors.count - 50) }
            }
        }
    }

    /// Sets gauge `name` of the current bucket.
    public func sample(_ name: String, _ value: Double) {
        let now = self.clock()
        self.state.withLockedValue { state in Self.withBucket(&state, at: now) { $0.gauges[name] = value } }
    }

    private static func withBucket(_ state: inout State, at date: Date, _ body: (inout Bucket) -> Void) {
        let start = Int(date.timeIntervalSince1970) / Self.bucketSeconds * Self.bucketSeconds
        let index = (start / Self.bucketSeconds) % Self.bucketCount
        if state.buckets[index].start != start { state.buckets[index] = Bucket(start: start) }
        body(&state.buckets[index])
    }

    /// One step of a snapshot.
    public struct Step: Sendable {
        /// The step's start, seconds since 1970.
        public let start: Int
        /// Requests per second of each group.
        public let rate: [String: Double]
        /// 5xx answers per second, all groups.
        public let serverErrorRate: Double
        /// 4xx answers per second, all groups.
        public let clientErrorRate: Double
        /// p99 latency of each group that answered in this step, milliseconds.
        public let p99Milliseconds: [String: Double]
        /// The gauges sampled in this step.
        public let gauges: [String: Double]
    }

    /// The last hour, oldest step first (steps nobody recorded in are empty), and the last 5xx answers, newest first.
    public func snapshot() -> (steps: [Step], errors: [ServerError]) {
        let now = Int(self.clock().timeIntervalSince1970) / Self.bucketSeconds * Self.bucketSeconds
        let (buckets, errors) = self.state.withLockedValue { ($0.buckets, $0.errors) }
        var steps: [Step] = []
        steps.reserveCapacity(Self.bucketCount)
        let seconds = Double(Self.bucketSeconds)
        for back in stride(from: Self.bucketCount - 1, through: 0, by: -1) {
            let start = now - back * Self.bucketSeconds
            let bucket = buckets[(start / Self.bucketSeconds) % Self.bucketCount]
            guard bucket.start == start else {
                steps.append(Step(start: start, rate: [:], serverErrorRate: 0, clientErrorRate: 0, p99Milliseconds: [:], gauges: [:]))
                continue
            }
            var rate: [String: Double] = [:]
            var p99: [String: Double] = [:]
            var server = 0
            var client = 0
            for (group, counts) in bucket.groups {
                rate[group] = Double(counts.requests) / seconds
                server += counts.serverErrors
                client += counts.clientErrors
                p99[group] = Self.percentile(0.99, of: counts.latency)
            }
            steps.append(
                Step(
                    start: start, rate: rate, serverErrorRate: Double(server) / seconds, clientErrorRate: Double(client) / seconds,
                    p99Milliseconds: p99, gauges: bucket.gauges))
        }
        return (steps, errors.reversed())
    }

    /// The upper bound (ms) of the latency bucket holding the `quantile` of `counts` (bucket k: below 2^(k+1) µs).
    static func percentile(_ quantile: Double, of counts: [Int]) -> Double {
        let total = counts.reduce(0, +)
        guard total > 0 else { return 0 }
        let wanted = Int((Double(total) * quantile).rounded(.up))
        var seen = 0
        for (slot, count) in counts.enumerated() {
            seen += count
            if seen >= wanted { return Double(1 << (slot + 1)) / 1000 }
        }
        return Double(1 << counts.count) / 1000
    }
}
