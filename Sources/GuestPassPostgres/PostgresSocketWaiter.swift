import CLibPQ
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc

    /// Waits for libpq sockets to become readable (or writable) for tasks, on one thread for the whole pool.
    ///
    /// A request transaction (`PostgresConnection.requestTransaction(_:readOnly:_:waiter:)`) sends its pipeline and reads
    /// its results on the task's own thread — libpq runs non-blocking, so neither blocks — and suspends only while
    /// PostgreSQL works, here: the socket is registered (`EPOLLONESHOT`) with this waiter's epoll set, and its thread
    /// resumes the task when an answer arrives. Compared with handing the whole exchange to a pool thread, a request saves
    /// that thread's two sleeps and wake-ups (`bench/cpu.sh`'s "switches"), and one thread serves every connection.
    ///
    /// Limits: one wait per socket at a time (a connection is borrowed by one task). A wake-up may be spurious (a
    /// readiness that another wait consumed): callers read what arrived and wait again while libpq is still busy.
    /// Deadlines are checked at least every `tick` (250 ms), so a timeout fires up to that late. Linux only (epoll);
    /// elsewhere the pool keeps its threads (the type below the `#else` only refuses to be made).
    final class PostgresSocketWaiter: Sendable {
        /// The wait's deadline passed before the socket became ready.
        struct Timeout: Error {}
        /// The waiter stopped (its pool shut down) while the task waited.
        struct Stopped: Error {}

        private struct Wait {
            let continuation: CheckedContinuation<Void, any Error>
            let deadline: ContinuousClock.Instant
        }

        private struct State {
            var waits: [Int32: Wait] = [:]
            var isStopped = false
        }

        private let epoll: Int32
        private let wakeUp: Int32
        private let state = NIOLockedValueBox(State())
        private let stopped = ConditionLock(value: false)
        private static let tick: Duration = .milliseconds(250)

        init() throws {
            let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
            guard epoll >= 0 else { throw PostgresError(.connectionFailed, message: "epoll_create1 failed: \(String(cString: strerror(errno)))") }
            let wakeUp = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
            guard wakeUp >= 0 else {
                close(epoll)
                throw PostgresError(.connectionFailed, message: "eventfd failed: \(String(cString: strerror(errno)))")
            }
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.fd = wakeUp
            epoll_ctl(epoll, EPOLL_CTL_ADD, wakeUp, &event)
            self.epoll = epoll
            self.wakeUp = wakeUp
            let thread = Thread { [self] in self.run() }
            thread.name = "postgres-waiter"
            thread.start()
        }

        deinit {
            close(self.epoll)
            close(self.wakeUp)
        }

        /// Suspends until `socket` is readable (or, with `writable`, also writable), has an error or hung up, or until
        /// `deadline` (`Timeout`).
        func wait(socket: Int32, writable: Bool = false, until deadline: ContinuousClock.Instant) async throws {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let accepted = self.state.withLockedValue { state -> Bool in
                    guard !state.isStopped else { return false }
                    state.waits[socket] = Wait(continuation: continuation, deadline: deadline)
                    return true
                }
                guard accepted else { return continuation.resume(throwing: Stopped()) }
                var event = epoll_event()
                event.events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLONESHOT.rawValue | (writable ? EPOLLOUT.rawValue : 0)
                event.data.fd = socket
                // A socket is added once and re-armed after; a closed socket leaves the set by itself, and its number may
                // come back for a new connection: whichever call fails first for that reason, the other one succeeds.
                var result = epoll_ctl(self.epoll, EPOLL_CTL_MOD, socket, &event)
                if result != 0, errno == ENOENT { result = epoll_ctl(self.epoll, EPOLL_CTL_ADD, socket, &event) }
                if result != 0, errno == EEXIST { result = epoll_ctl(self.epoll, EPOLL_CTL_MOD, socket, &event) }
                guard result != 0 else { return }
                let failure = PostgresError(.connectionLost, message: "epoll_ctl failed: \(String(cString: strerror(errno)))")
                if let wait = self.state.withLockedValue({ $0.waits.removeValue(forKey: socket) }) { wait.continuation.resume(throwing: failure) }
            }
        }

        /// Stops the thread (awaiting its end) and fails every wait still pending with `Stopped`.
        func stop() {
            let wasRunning = self.state.withLockedValue { state -> Bool in
                defer { state.isStopped = true }
                return !state.isStopped
            }
            guard wasRunning else { return }
            var one: UInt64 = 1
            _ = write(self.wakeUp, &one, MemoryLayout<UInt64>.size)
            self.stopped.lock(whenValue: true)
            self.stopped.unlock()
        }

        private func run() {
            var events = [epoll_event](repeating: epoll_event(), count: 64)
            var nextDeadlineCheck = ContinuousClock.now + Self.tick
            let tickMilliseconds = Int32(Self.tick.components.attoseconds / 1_000_000_000_000_000)
            while true {
                let count = events.withUnsafeMutableBufferPointer { epoll_wait(self.epoll, $0.baseAddress, Int32($0.count), tickMilliseconds) }
                if count < 0, errno != EINTR { break }
                var ready: [CheckedContinuation<Void, any Error>] = []
                var expired: [CheckedContinuation<Void, any Error>] = []
                var stop = false
                let now = ContinuousClock.now
                self.state.withLockedValue { state in
                    for index in 0..<max(0, Int(count)) {
                        let socket = events[index].data.fd
                        if socket == self.wakeUp {
                            stop = true
                        } else if let wait = state.waits.removeValue(forKey: socket) {
                            ready.append(wait.continuation)
                        }
                    }
                    if stop || state.isStopped {
                        stop = true
                        expired = state.waits.values.map(\.continuation)
                        state.waits.removeAll()
                    } else if now >= nextDeadlineCheck {
                        nextDeadlineCheck = now + Self.tick
                        for (socket, wait) in state.waits where wait.deadline <= now {
                            state.waits[socket] = nil
                            expired.append(wait.continuation)
                        }
                    }
                }
                for continuation in ready { continuation.resume() }
                for continuation in expired { continuation.resume(throwing: stop ? Stopped() as any Error : Timeout()) }
                if stop { break }
            }
            // However the loop ended, no wait is left pending.
            let remaining = self.state.withLockedValue { state -> [CheckedContinuation<Void, any Error>] in
                state.isStopped = true
                defer { state.waits.removeAll() }
                return state.waits.values.map(\.continuation)
            }
            for continuation in remaining { continuation.resume(throwing: Stopped()) }
            self.stopped.lock()
            self.stopped.unlock(withValue: true)
        }
    }
#else
    /// Elsewhere than Linux there is no epoll set: `init` throws, so a pool has no waiter and blocks a pool thread for
    /// every call instead.
    final class PostgresSocketWaiter: Sendable {
        struct Timeout: Error {}
        struct Stopped: Error {}

        init() throws { throw PostgresError(.connectionFailed, message: "no epoll on this system") }

        func wait(socket: Int32, writable: Bool = false, until deadline: ContinuousClock.Instant) async throws { throw Stopped() }

        func stop() {}
    }
#endif
