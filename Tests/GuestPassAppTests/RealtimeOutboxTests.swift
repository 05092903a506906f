import Foundation
import RealtimeProtocol
import Testing

@testable import GuestPassApp

/// The per-socket queue: producers never wait, a client that falls behind is cut off with one last message instead
/// of growing the server's memory, and frames come out in the order each producer put them in.
@Suite struct RealtimeOutboxTests {
    static func drain(_ outbox: RealtimeOutbox) async -> (frames: [RealtimeFrame], ending: RealtimeOutbox.Ending) {
        var frames: [RealtimeFrame] = []
        while true {
            switch await outbox.next() {
            case .success(let batch): frames += batch
            case .failure(let end): return (frames, end.ending)
            }
        }
    }

    @Test func aClientTooFarBehindGetsOneLastMessageAndIsClosed() async {
        let outbox = RealtimeOutbox(maxFrames: 3, maxBytes: 1 << 20)
        for index in 0..<3 { #expect(outbox.enqueue(.text("m\(index)"), farewell: .text("bye"))) }
        #expect(!outbox.enqueue(.text("m3"), farewell: .text("bye")), "the fourth frame finds the queue full")
        #expect(outbox.isFinished)
        #expect(!outbox.enqueue(.text("m4")), "nothing is accepted after the overflow")
        let (frames, ending) = await Self.drain(outbox)
        #expect(frames == [.text("m0"), .text("m1"), .text("m2"), .text("bye")])
        #expect(ending == .overflow)
    }

    @Test func theByteLimitCountsToo() async {
        let outbox = RealtimeOutbox(maxFrames: 100, maxBytes: 10)
        #expect(outbox.enqueue(.binary([UInt8](repeating: 1, count: 6))))
        #expect(!outbox.enqueue(.text("12345")), "6 + 5 bytes exceed 10")
        let (frames, ending) = await Self.drain(outbox)
        #expect(frames.count == 1)
        #expect(ending == .overflow)
    }

    @Test func aDrainedQueueAcceptsAgainAndAFinishEndsItAfterItsFrames() async {
        let outbox = RealtimeOutbox(maxFrames: 2, maxBytes: 1 << 20)
        #expect(outbox.enqueue(.text("a")) && outbox.enqueue(.text("b")))
        guard case .success(let first) = await outbox.next() else {
            Issue.record("expected frames")
            return
        }
        #expect(first == [.text("a"), .text("b")])
        #expect(outbox.enqueue(.text("c")) && outbox.enqueue(.text("d")), "the writer took the first two: room again")
        outbox.finish(.policy("No heartbeat"))
        let (rest, ending) = await Self.drain(outbox)
        #expect(rest == [.text("c"), .text("d")])
        #expect(ending == .policy("No heartbeat"))
    }

    @Test func concurrentProducersKeepTheirOwnOrderAndTheWriterWakesForEach() async {
        let outbox = RealtimeOutbox(maxFrames: 100_000, maxBytes: 1 << 30)
        let producers = 8
        let perProducer = 2_000
        async let drained = Self.drain(outbox)
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for index in 0..<perProducer { _ = outbox.enqueue(.text("\(producer):\(index)")) }
                }
            }
        }
        outbox.finish()
        let (frames, ending) = await drained
        #expect(ending == .normal)
        #expect(frames.count == producers * perProducer)
        var next = [Int](repeating: 0, count: producers)
        for case .text(let text) in frames {
            let parts = text.split(separator: ":").compactMap { Int($0) }
            #expect(parts[1] == next[parts[0]], "producer \(parts[0]) out of order")
            next[parts[0]] = parts[1] + 1
        }
    }
}

/// The poll-lag metric reads Realtime's `commit_timestamp` without a date formatter.
@Suite struct RealtimeTimestampTests {
    @Test(arguments: ["1970-01-01T00:00:00.000Z", "2000-02-29T12:34:56.789Z", "2026-11-25T09:31:43.039Z", "2100-12-31T23:59:59.999Z"])
    func commitTimestampsReadAsFoundationDoes(_ text: String) throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let expected = try #require(formatter.date(from: text)).timeIntervalSince1970
        let read = try #require(RealtimeMetrics.seconds(since1970: text))
        #expect(abs(read - expected) < 0.0005)
    }

    @Test(arguments: ["", "2026-11-25T09:31:43Z", "2026-13-25T09:31:43.039Z", "2026-11-25 09:31:43.039Z", "2026-1a-25T09:31:43.039Z"])
    func otherTextIsNotATimestamp(_ text: String) {
        #expect(RealtimeMetrics.seconds(since1970: text) == nil)
    }
}
