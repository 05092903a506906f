import NIOConcurrencyHelpers
import RealtimeProtocol

/// The bounded queue between everything that wants to tell a client something (its own replies, the change feed,
/// broadcasts, presence) and the one task that writes to its socket.
///
/// Producers never wait: `enqueue` is synchronous, so one slow client can never hold up the change feed or another
/// socket. When a client falls behind by more than `maxFrames` frames or `maxBytes` bytes, the queue refuses further
/// frames, keeps one last `system` message for the client, and tells the writer to close the socket with 1008: the
/// client reconnects and refetches, and the server's memory stays bounded (the issue's "a slow client is
/// disconnected, never allowed to grow memory").
final class RealtimeOutbox: Sendable {
    /// Why the writer stops.
    enum Ending: Sendable, Equatable {
        /// The socket is going away normally (the client left, or the server shuts down).
        case normal
        /// The client could not keep up (close code 1008).
        case overflow
        /// The server closes the socket for a reason it names (close code 1008).
        case policy(String)
    }

    private struct State {
        var frames: [RealtimeFrame] = []
        var bytes = 0
        var ending: Ending?
        var waiter: CheckedContinuation<Void, Never>?
    }

    let maxFrames: Int
    let maxBytes: Int
    private let state = NIOLockedValueBox(State())

    init(maxFrames: Int, maxBytes: Int) {
        self.maxFrames = maxFrames
        self.maxBytes = maxBytes
    }

    /// Queues `frame`; false (and the socket is closing) when the client is too far behind or the queue has ended.
    /// `farewell`, when given, is queued past the limits just before an overflow ends the queue.
    @discardableResult
    func enqueue(_ frame: RealtimeFrame, farewell: @autoclosure () -> RealtimeFrame? = nil) -> Bool {
        let (accepted, waiter) = self.state.withLockedValue { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard state.ending == nil else { return (false, nil) }
            if state.frames.count >= self.maxFrames || state.bytes + frame.byteCount > self.maxBytes {
                if let last = farewell() { state.frames.append(last) }
                state.ending = .overflow
            } else {
                state.frames.append(frame)
                state.bytes += frame.byteCount
            }
            let waiter = state.waiter
            state.waiter = nil
            return (state.ending == nil, waiter)
        }
        waiter?.resume()
        return accepted
    }

    /// Ends the queue: the writer sends what is queued, then closes.
    func finish(_ ending: Ending = .normal) {
        let waiter = self.state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            if state.ending == nil { state.ending = ending }
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Whether the queue has ended (nothing more will be accepted).
    var isFinished: Bool { self.state.withLockedValue { $0.ending != nil } }

    /// The frames queued so far (waiting while there are none), or the ending once the queue is drained.
    func next() async -> Result<[RealtimeFrame], EndingError> {
        while true {
            let taken = self.state.withLockedValue { state -> Result<[RealtimeFrame], EndingError>? in
                if !state.frames.isEmpty {
                    let frames = state.frames
                    state.frames = []
                    state.bytes = 0
                    return .success(frames)
                }
                if let ending = state.ending { return .failure(EndingError(ending: ending)) }
                return nil
            }
            if let taken { return taken }
            await withCheckedContinuation { continuation in
                let resumeNow = self.state.withLockedValue { state -> Bool in
                    if !state.frames.isEmpty || state.ending != nil { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// The ending, as the failure of `next()`.
    struct EndingError: Error {
        let ending: Ending
    }
}
