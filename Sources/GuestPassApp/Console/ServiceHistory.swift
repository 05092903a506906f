public import Foundation
import NIOConcurrencyHelpers

/// The server's own measurements over the last hour, kept in memory for the console's health page: no Prometheus
/// needed to look. 360 buckets of 10 seconds (a ring); per route group (`auth`, `rpc`, `rest`, `realtime`, `storage`,
/// `health`, `other`) each bucket counts requests, 4xx and 5xx answers and their latencies in fixed logarithmic
/// buckets (`LatencyBuckets`: four per power of two, so a p99 is within 25 % of the true one); gauges (pool
/// connections, Realtime sockets, the mail queue) are set once per bucket by `ServiceHistorySampler`. The last 50 5xx
/// answers are kept with their route template, error code and request id (never a path's values, a header or a body).
///
/// One lock; a request costs a few array increments under it (no allocation but the first of its group in a bucket).
/// A restart starts the history anew; each replica has its own. One instance per application: `buildApplication`
/// takes it (`history:`) and hands it to the request metrics, the sampler and the console.
public final class ServiceHistory: Sendable {
    /// Seconds per bucket.
    public static let bucketSeconds = 10
    /// Buckets kept: an hour.
    public static let bucketCount = 360
    /// 5xx answers kept.
    public static let errorCount = 50

    /// The route groups, in the order the page shows them.
    public static let groups = RouteGroup.allCases.map(\.rawValue)

    /// Which part of the API a request went to.
    public enum RouteGroup: String, CaseIterable, Sendable {
        case auth, rpc, rest, realtime, storage, health, other

        /// The group of a request path.
        public init(path: String) {
            if path.hasPrefix("/auth/") {
                self = .auth
            } else if path.hasPrefix("/rest/v1/rpc/") {
                self = .rpc
            } else if path.hasPrefix("/rest/") {
                self = .rest
            } else if path.hasPrefix("/realtime/") {
                self = .realtime
            } else if path.hasPrefix("/storage/") {
                self = .storage
            } else if path.hasPrefix("/health") {
                self = .health
            } else {
                self = .other
            }
        }

        var index: Int {
            switch self {
            case .auth: 0
            case .rpc: 1
            case .rest: 2
            case .realtime: 3
            case .storage: 4
            case .health: 5
            case .other: 6
            }
        }
    }

    /// The group of a request path, by name.
    public static func group(ofPath path: String) -> String { RouteGroup(path: path).rawValue }

    struct GroupCounts {
        var requests = 0
        var clientErrors = 0
        var serverErrors = 0
        /// Empty until the group's first request in the bucket, then `LatencyBuckets.count` counters.
        var latency: [UInt32] = []
    }

    struct Bucket {
        var start: Int = -1
        var groups = [GroupCounts](repeating: GroupCounts(), count: RouteGroup.allCases.count)
        var gauges: [String: Double] = [:]
    }

    /// A 5xx answer: when, where (the route template, never the path's values), what (status, error code) and its
    /// request id, to find its log lines.
    public struct ServerError: Sendable, Equatable {
        public let at: Date
        public let group: String
        public let route: String
        public let status: Int
        /// The error's code as answered (`unexpected_failure`, `PGRST003`, …), when the error middleware answered it.
        public let code: String?
        /// The request's id (`X-Request-Id`).
        public let requestID: String?
    }

    struct State {
        var buckets = [Bucket](repeating: Bucket(), count: ServiceHistory.bucketCount)
        /// A ring of the last `errorCount` errors; `nextError` is where the next one goes.
        var errors: [ServerError] = []
        var nextError = 0
    }

    private let state = NIOLockedValueBox(State())
    private let clock: @Sendable () -> Date

    /// A history reading time from `clock` (tests pass their own and move it instead of sleeping).
    public init(clock: @escaping @Sendable () -> Date = { Date() }) {
        self.clock = clock
    }

    /// Counts one answered request: its path (for the group), route template, status and latency; a 5xx answer is
    /// also kept among the last errors with `code` and `requestID`.
    public func record(path: String, route: String, status: Int, nanoseconds: UInt64, code: String? = nil, requestID: String? = nil) {
        let now = self.clock()
        let group = RouteGroup(path: path)
        let slot = LatencyBuckets.slot(microseconds: nanoseconds / 1000)
        let error = status >= 500 ? ServerError(at: now, group: group.rawValue, route: route, status: status, code: code, requestID: requestID) : nil
        self.state.withLockedValue { state in
            let index = Self.bucketIndex(&state, at: now)
            Self.count(&state.buckets[index].groups[group.index], status: status, slot: slot)
            if let error {
                if state.errors.count < Self.errorCount {
                    state.errors.append(error)
                } else {
                    state.errors[state.nextError] = error
                }
                state.nextError = (state.nextError + 1) % Self.errorCount
            }
        }
    }

    private static func count(_ counts: inout GroupCounts, status: Int, slot: Int) {
        counts.requests += 1
        if (400..<500).contains(status) { counts.clientErrors += 1 }
        if status >= 500 { counts.serverErrors += 1 }
        if counts.latency.isEmpty { counts.latency = [UInt32](repeating: 0, count: LatencyBuckets.count) }
        counts.latency[slot] &+= 1
    }

    /// Sets gauge `name` of the current bucket (the last value set in a bucket is the one shown).
    public func sample(_ name: String, _ value: Double) {
        let now = self.clock()
        self.state.withLockedValue { state in
            let index = Self.bucketIndex(&state, at: now)
            state.buckets[index].gauges[name] = value
        }
    }

    /// Seconds from now until the next bucket starts.
    public func secondsUntilNextBucket() -> Double {
        let now = self.clock().timeIntervalSince1970
        let seconds = Double(Self.bucketSeconds)
        return seconds - now.truncatingRemainder(dividingBy: seconds)
    }

    /// The start (seconds since 1970) of the bucket holding `date`.
    static func bucketStart(_ date: Date) -> Int {
        Int(date.timeIntervalSince1970.rounded(.down)) / Self.bucketSeconds * Self.bucketSeconds
    }

    /// The ring index of the bucket holding `date`, emptied first when it still holds an older bucket.
    private static func bucketIndex(_ state: inout State, at date: Date) -> Int {
        let start = Self.bucketStart(date)
        let index = (start / Self.bucketSeconds) % Self.bucketCount
        if state.buckets[index].start != start { state.buckets[index] = Bucket(start: start) }
        return index
    }

    /// One step of a snapshot.
    public struct Step: Sendable {
        /// The step's start, seconds since 1970.
        public let start: Int
        /// Requests answered in this step, per group that answered any.
        public let requests: [String: Int]
        /// 4xx answers per group.
        public let clientErrors: [String: Int]
        /// 5xx answers per group.
        public let serverErrors: [String: Int]
        /// Requests per second of each group.
        public let rate: [String: Double]
        /// 5xx answers per second, all groups.
        public let serverErrorRate: Double
        /// 4xx answers per second, all groups.
        public let clientErrorRate: Double
        /// p99 latency of each group that answered in this step, milliseconds: the upper bound of the latency bucket
        /// holding it.
        public let p99Milliseconds: [String: Double]
        /// The gauges sampled in this step.
        public let gauges: [String: Double]

        static func empty(_ start: Int) -> Step {
            Step(
                start: start, requests: [:], clientErrors: [:], serverErrors: [:], rate: [:], serverErrorRate: 0, clientErrorRate: 0,
                p99Milliseconds: [:], gauges: [:])
        }
    }

    /// The last hour, oldest step first, the current (partial) step last (steps nobody recorded in are empty), and
    /// the last 5xx answers, newest first.
    public func snapshot() -> (steps: [Step], errors: [ServerError]) {
        let now = Self.bucketStart(self.clock())
        // Copied under the lock (copy-on-write: the arrays themselves are copied by the next write), read outside it.
        let (buckets, errors, nextError) = self.state.withLockedValue { ($0.buckets, $0.errors, $0.nextError) }
        var steps: [Step] = []
        steps.reserveCapacity(Self.bucketCount)
        for back in stride(from: Self.bucketCount - 1, through: 0, by: -1) {
            let start = now - back * Self.bucketSeconds
            let bucket = buckets[(start / Self.bucketSeconds) % Self.bucketCount]
            steps.append(bucket.start == start ? Self.step(bucket) : .empty(start))
        }
        let ordered = errors.count < Self.errorCount ? errors : Array(errors[nextError...] + errors[..<nextError])
        return (steps, ordered.reversed())
    }

    private static func step(_ bucket: Bucket) -> Step {
        let seconds = Double(Self.bucketSeconds)
        var requests: [String: Int] = [:]
        var clientErrors: [String: Int] = [:]
        var serverErrors: [String: Int] = [:]
        var rate: [String: Double] = [:]
        var p99: [String: Double] = [:]
        for group in RouteGroup.allCases {
            let counts = bucket.groups[group.index]
            guard counts.requests > 0 else { continue }
            requests[group.rawValue] = counts.requests
            clientErrors[group.rawValue] = counts.clientErrors
            serverErrors[group.rawValue] = counts.serverErrors
            rate[group.rawValue] = Double(counts.requests) / seconds
            p99[group.rawValue] = LatencyBuckets.percentileMilliseconds(0.99, of: counts.latency)
        }
        return Step(
            start: bucket.start, requests: requests, clientErrors: clientErrors, serverErrors: serverErrors, rate: rate,
            serverErrorRate: Double(serverErrors.values.reduce(0, +)) / seconds, clientErrorRate: Double(clientErrors.values.reduce(0, +)) / seconds,
            p99Milliseconds: p99, gauges: bucket.gauges)
    }
}

/// The fixed latency buckets of `ServiceHistory`, in microseconds: 0, 1, 2 and 3 each their own, then four buckets per
/// power of two ([4, 5), [5, 6), … [8, 10), [10, 12), …), the last one open (from about 67 s). A bucket's upper bound
/// is at most 1.25 times its lower bound, so a percentile read as its bucket's upper bound is at most 25 % high.
enum LatencyBuckets {
    /// Buckets per power of two.
    static let perOctave = 4
    /// Powers of two covered, from 4 µs.
    static let octaves = 24
    /// Buckets in all.
    static let count = 4 + octaves * perOctave

    /// The bucket of a latency of `microseconds`.
    static func slot(microseconds: UInt64) -> Int {
        guard microseconds >= 4 else { return Int(microseconds) }
        let exponent = 63 - microseconds.leadingZeroBitCount
        let sub = Int(microseconds >> UInt64(exponent - 2)) - 4
        return min(Self.count - 1, 4 + (exponent - 2) * Self.perOctave + sub)
    }

    /// The smallest latency (µs) of bucket `slot`.
    static func lowerBound(_ slot: Int) -> UInt64 {
        guard slot >= 4 else { return UInt64(slot) }
        let exponent = (slot - 4) / Self.perOctave + 2
        return UInt64(4 + (slot - 4) % Self.perOctave) << UInt64(exponent - 2)
    }

    /// The latency (µs) just past bucket `slot` (for the last, open bucket: its lower bound's next step).
    static func upperBound(_ slot: Int) -> UInt64 { Self.lowerBound(slot + 1) }

    /// The upper bound, in milliseconds, of the bucket holding the `quantile` of `counts`; 0 without any.
    static func percentileMilliseconds(_ quantile: Double, of counts: [UInt32]) -> Double {
        let total = counts.reduce(0) { $0 + Int($1) }
        guard total > 0 else { return 0 }
        let wanted = max(1, Int((Double(total) * quantile).rounded(.up)))
        var seen = 0
        for (slot, count) in counts.enumerated() {
            seen += Int(count)
            if seen >= wanted { return Double(Self.upperBound(slot)) / 1000 }
        }
        return Double(Self.upperBound(counts.count - 1)) / 1000
    }
}
