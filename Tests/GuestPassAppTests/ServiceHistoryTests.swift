import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import GuestPassApp

/// The console's in-memory hour (`ServiceHistory`): buckets rolled over by an injected clock (nothing sleeps), the
/// latency buckets and their p99, exact counts from many tasks at once, the last errors, the gauges and their sampler,
/// and the request metrics feeding it through a router.
@Suite struct ServiceHistoryTests {
    /// A clock the test moves.
    final class Clock: Sendable {
        let now: NIOLockedValueBox<Date>
        init(_ seconds: TimeInterval = 1_800_000_000) { self.now = NIOLockedValueBox(Date(timeIntervalSince1970: seconds)) }
        func advance(_ seconds: TimeInterval) { self.now.withLockedValue { $0 = $0.addingTimeInterval(seconds) } }
        var read: @Sendable () -> Date { { self.now.withLockedValue { $0 } } }
    }

    @Test func pathsFallInTheirRouteGroups() {
        let expected: [(String, String)] = [
            ("/auth/v1/token", "auth"), ("/rest/v1/rpc/get_quota", "rpc"), ("/rest/v1/readings", "rest"), ("/realtime/v1/websocket", "realtime"),
            ("/storage/v1/object/a/b", "storage"), ("/health/ready", "health"), ("/v1/account", "other"), ("/", "other"),
            ("/authx", "other"),
        ]
        for (path, group) in expected { #expect(ServiceHistory.group(ofPath: path) == group, "\(path)") }
        #expect(ServiceHistory.groups == ["auth", "rpc", "rest", "realtime", "storage", "health", "other"])
    }

    @Test func bucketsRollOverWithTheClock() {
        let clock = Clock(1_800_000_000)  // a bucket's start
        let history = ServiceHistory(clock: clock.read)
        for _ in 0..<20 { history.record(path: "/rest/v1/rpc/get_quota", route: "/rest/v1/rpc/{name}", status: 200, nanoseconds: 900_000) }
        clock.advance(9.9)  // still the same bucket
        history.record(path: "/auth/v1/user", route: "/auth/v1/user", status: 401, nanoseconds: 100_000)
        clock.advance(0.1)  // the next one
        history.record(path: "/rest/v1/readings", route: "/rest/v1/{table}", status: 503, nanoseconds: 5_000_000)
        var steps = history.snapshot().steps
        #expect(steps.count == ServiceHistory.bucketCount)
        #expect(steps.last?.start == 1_800_000_010 && steps.first?.start == 1_800_000_010 - 359 * 10)
        #expect(zip(steps, steps.dropFirst()).allSatisfy { $1.start - $0.start == 10 })
        let previous = steps[steps.count - 2]
        #expect(previous.requests == ["rpc": 20, "auth": 1] && previous.rate["rpc"] == 2.0)
        #expect(previous.clientErrors["auth"] == 1 && previous.clientErrorRate == 0.1 && previous.serverErrorRate == 0)
        #expect(steps.last?.requests == ["rest": 1] && steps.last?.serverErrors["rest"] == 1 && steps.last?.serverErrorRate == 0.1)
        #expect(steps.dropLast(2).allSatisfy { $0.requests.isEmpty && $0.gauges.isEmpty })

        // 59 min 50 s on, the first bucket is the oldest step shown; 10 s more and it is gone.
        clock.advance(3590 - 10)
        steps = history.snapshot().steps
        #expect(steps.first?.start == 1_800_000_000 && steps.first?.requests["rpc"] == 20)
        clock.advance(10)
        steps = history.snapshot().steps
        #expect(steps.first?.start == 1_800_000_010 && steps.first?.requests == ["rest": 1])
        #expect(steps.last?.requests.isEmpty == true)

        // Its ring slot is reused by the new bucket: counted from zero, not added to the old counts.
        history.record(path: "/rest/v1/rpc/get_quota", route: "/rest/v1/rpc/{name}", status: 200, nanoseconds: 900_000)
        #expect(history.snapshot().steps.last?.requests == ["rpc": 1])
        clock.advance(3600)
        #expect(history.snapshot().steps.allSatisfy { $0.requests.isEmpty })
    }

    @Test func theNextBucketIsWhereTheClockSays() {
        let clock = Clock(1_800_000_003.25)
        let history = ServiceHistory(clock: clock.read)
        #expect(abs(history.secondsUntilNextBucket() - 6.75) < 1e-6)
        clock.advance(6.75)
        #expect(history.secondsUntilNextBucket() == 10)
    }

    @Test func latencyBucketsTileTheLineAndAreNarrow() {
        #expect(LatencyBuckets.lowerBound(0) == 0)
        for slot in 0..<(LatencyBuckets.count - 1) {
            let lower = LatencyBuckets.lowerBound(slot)
            let upper = LatencyBuckets.upperBound(slot)
            #expect(lower < upper && LatencyBuckets.lowerBound(slot + 1) == upper, "slot \(slot)")
            #expect(LatencyBuckets.slot(microseconds: lower) == slot && LatencyBuckets.slot(microseconds: upper - 1) == slot, "slot \(slot)")
            if slot >= 4 { #expect(Double(upper) <= 1.25 * Double(lower), "slot \(slot)") }
        }
        #expect(LatencyBuckets.slot(microseconds: .max) == LatencyBuckets.count - 1)
        #expect(LatencyBuckets.upperBound(LatencyBuckets.count - 1) == 1 << 26)
    }

    /// The p99 a step reports is the upper bound of the bucket holding the true p99 (nearest rank): never below it,
    /// at most a bucket's width (25 %) above it — for skewed, uniform and spiky latencies.
    @Test(arguments: [1, 2, 3])
    func theP99IsWithinItsBucketsWidth(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let shapes: [[UInt64]] = [
            (0..<1000).map { $0 < 985 ? 300_000 : 40_000_000 },
            (0..<2000).map { _ in UInt64.random(in: 50_000...80_000_000, using: &random) },
            (0..<997).map { _ in UInt64(exp(Double.random(in: 2...14, using: &random)) * 1000) },
            [7_000],
        ]
        for nanoseconds in shapes {
            let history = ServiceHistory(clock: Clock().read)
            for value in nanoseconds.shuffled(using: &random) {
                history.record(path: "/auth/v1/user", route: "/auth/v1/user", status: 200, nanoseconds: value)
            }
            let sorted = nanoseconds.map { $0 / 1000 }.sorted()
            let truth = Double(sorted[Int((Double(sorted.count) * 0.99).rounded(.up)) - 1])
            let p99 = (history.snapshot().steps.last?.p99Milliseconds["auth"] ?? 0) * 1000
            #expect(p99 > truth && p99 <= truth * 1.25 + 1, "p99 \(p99) µs, true \(truth) µs")
        }
    }

    @Test func concurrentRecordingAddsUpExactly() async throws {
        let history = ServiceHistory(clock: Clock().read)
        let statuses = [200, 201, 404, 429, 500, 503]
        let paths = ["/storage/v1/object/a", "/rest/v1/readings", "/auth/v1/token"]
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<50 {
                group.addTask {
                    for index in 0..<360 {  // 20 rounds of every (path, status) pair
                        history.record(
                            path: paths[index % 3], route: "r", status: statuses[(index / 3) % 6], nanoseconds: UInt64(index) * 10_000,
                            requestID: "t\(task)-\(index)")
                    }
                }
            }
        }
        let (steps, errors) = history.snapshot()
        let last = try #require(steps.last)
        #expect(last.requests == ["storage": 6000, "rest": 6000, "auth": 6000])
        #expect(last.clientErrors == ["storage": 2000, "rest": 2000, "auth": 2000] && last.serverErrors.values.reduce(0, +) == 6000)
        #expect(errors.count == ServiceHistory.errorCount && Set(errors.compactMap(\.requestID)).count == ServiceHistory.errorCount)
    }

    @Test func theLastFiftyServerErrorsAreKeptNewestFirst() {
        let clock = Clock()
        let history = ServiceHistory(clock: clock.read)
        for index in 0..<120 {
            history.record(path: "/auth/v1/token", route: "/auth/v1/token", status: 401, nanoseconds: 1000, code: "bad_jwt", requestID: "c\(index)")
            history.record(
                path: "/rest/v1/rpc/f", route: "/rest/v1/rpc/{name}", status: 500 + index % 4, nanoseconds: 1000, code: "PGRST00\(index % 4)",
                requestID: "r\(index)")
            clock.advance(1)
        }
        let errors = history.snapshot().errors
        #expect(errors.map(\.requestID) == (70..<120).reversed().map { "r\($0)" })
        #expect(errors.first?.code == "PGRST003" && errors.first?.status == 503 && errors.first?.group == "rpc")
        #expect(errors.first?.route == "/rest/v1/rpc/{name}" && errors.first?.at == Date(timeIntervalSince1970: 1_800_000_119))
        #expect(errors.allSatisfy { $0.status >= 500 })
    }

    @Test func gaugesBelongToTheirBucketAndTheLastSampleWins() {
        let clock = Clock()
        let history = ServiceHistory(clock: clock.read)
        history.sample("pool_open", 3)
        history.sample("pool_open", 4)
        clock.advance(10)
        history.sample("realtime_sockets", 7)
        let steps = history.snapshot().steps
        #expect(steps[steps.count - 2].gauges == ["pool_open": 4])
        #expect(steps[steps.count - 1].gauges == ["realtime_sockets": 7])
    }

    @Test func theSamplerSetsEveryGaugeAndSkipsAMailQueueItCannotRead() async {
        struct Unavailable: Error {}
        let history = ServiceHistory(clock: Clock().read)
        let sockets = NIOLockedValueBox(12)
        let mailWorks = NIOLockedValueBox(true)
        let sampler = ServiceHistorySampler(
            history: history,
            sources: .init(
                pool: { (open: 5, idle: 2, waiting: 1) }, sockets: { sockets.withLockedValue { $0 } },
                mail: {
                    guard mailWorks.withLockedValue({ $0 }) else { throw Unavailable() }
                    return (queued: 4, oldestAgeSeconds: 42.5)
                }))
        await sampler.sampleOnce()
        #expect(
            history.snapshot().steps.last?.gauges == [
                "pool_open": 5, "pool_idle": 2, "pool_in_use": 3, "pool_waiting": 1, "realtime_sockets": 12, "mail_queued": 4,
                "mail_oldest_age": 42.5,
            ])
        let fresh = ServiceHistory(clock: Clock().read)
        mailWorks.withLockedValue { $0 = false }
        sockets.withLockedValue { $0 = 0 }
        await ServiceHistorySampler(history: fresh, sources: sampler.sources).sampleOnce()
        #expect(fresh.snapshot().steps.last?.gauges == ["pool_open": 5, "pool_idle": 2, "pool_in_use": 3, "pool_waiting": 1, "realtime_sockets": 0])
    }

    /// Through the API router's own middleware order: each answer counted once in its group under its route template,
    /// a 5xx kept with the code the error middleware answered and the request's id — never the path's values.
    @Test func theRequestMetricsFeedTheHistory() async throws {
        let history = ServiceHistory(clock: Clock().read)
        let router = Router(context: AppRequestContext.self)
        router.add(middleware: RequestLogMiddleware(level: .trace))
        router.add(middleware: RequestMetricsMiddleware(history: history))
        router.add(middleware: ErrorMiddleware(dialect: .goTrue))
        router.get("/rest/v1/rpc/{name}") { _, _ -> String in throw APIError.unexpected }
        router.get("/auth/v1/user") { _, _ -> String in throw APIError.unauthorized("bad_jwt", "no") }
        router.get("/health/live") { _, _ in "ok" }
        try await Application(router: router).test(.router) { client in
            for _ in 0..<3 { try await client.execute(uri: "/health/live", method: .get) { #expect($0.status == .ok) } }
            try await client.execute(uri: "/auth/v1/user", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/rest/v1/rpc/secret-value", method: .get, headers: [.init("X-Request-Id")!: "req-42"]) {
                #expect($0.status == .internalServerError)
            }
        }
        let (steps, errors) = history.snapshot()
        let last = try #require(steps.last)
        #expect(last.requests == ["health": 3, "auth": 1, "rpc": 1])
        #expect(last.clientErrors["auth"] == 1 && last.serverErrors["rpc"] == 1)
        #expect(errors.count == 1)
        #expect(errors.first?.route == "/rest/v1/rpc/{name}" && errors.first?.status == 500 && errors.first?.group == "rpc")
        #expect(errors.first?.code == "unexpected_failure" && errors.first?.requestID == "req-42")
    }
}

/// A small deterministic generator (SplitMix64), so a failing case can be run again.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { self.state = seed }
    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
