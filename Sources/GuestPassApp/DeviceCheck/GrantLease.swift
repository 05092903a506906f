import Foundation
import GuestPassPostgres
import GuestPassStore

/// The per-app lease under which a welcome-grant claim asks Apple again and sets bit0
/// (`guestpass_server.devicecheck_take_lease`, released by `devicecheck_finish`).
///
/// Within one process, claims of one app queue in memory first (`InProcessQueue`, first come first served), so only
/// the head of the queue polls PostgreSQL for the lease, which other replicas may hold; the lease row decides across
/// processes. A claim that has not got the lease by its deadline gives up: the caller closes it and answers 503.
struct GrantLease: Sendable {
    /// How long a lease lives unless released: longer than the Apple calls made under it (three at most, each bounded
    /// by the client's timeout), so it never expires under a working holder. A crashed holder delays the app's
    /// new-device grants by at most this long.
    static let timeToLive: Duration = .seconds(30)
    /// How long a claim waits for the lease before it gives up (503 `devicecheck_busy`).
    static let defaultWait: Duration = .seconds(10)
    /// Pause between two tries while another process holds the lease.
    static let pollInterval: Duration = .milliseconds(20)

    let functions: ServerFunctions
    let queue = InProcessQueue()
    var wait: Duration = Self.defaultWait

    /// Runs `body` holding the lease of the caller's app for `claim`, or returns nil if the lease could not be had
    /// within `wait`. `body` must finish the claim (which releases the lease in PostgreSQL).
    func withLease<R: Sendable>(
        _ identity: RequestIdentity, app: UUID, claim: UUID, _ body: () async throws -> R
    ) async throws -> R? {
        let deadline = ContinuousClock.now + self.wait
        guard await self.queue.enter(app, until: deadline) else { return nil }
        do {
            while true {
                let taken = try await self.functions.devicecheckTakeLease(claim: claim, timeToLive: Self.timeToLive, as: identity)
                if taken { break }
                guard ContinuousClock.now + Self.pollInterval < deadline else {
                    await self.queue.leave(app)
                    return nil
                }
                try? await Task.sleep(for: Self.pollInterval)
            }
            let result = try await body()
            await self.queue.leave(app)
            return result
        } catch {
            await self.queue.leave(app)
            throw error
        }
    }
}

/// A first-come-first-served queue per key, in memory: `enter` waits until the caller is at the head (or the
/// deadline passes), `leave` lets the next one in.
actor InProcessQueue {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private var busy: Set<UUID> = []
    private var waiters: [UUID: [Waiter]] = [:]
    private var nextID: UInt64 = 0

    /// Waits to be the one inside for `key`; false if `deadline` passed first (the caller is then not inside).
    func enter(_ key: UUID, until deadline: ContinuousClock.Instant) async -> Bool {
        if !self.busy.contains(key) {
            self.busy.insert(key)
            return true
        }
        self.nextID += 1
        let id = self.nextID
        let timeout = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            self.expire(key, id)
        }
        let entered = await withCheckedContinuation { continuation in
            self.waiters[key, default: []].append(Waiter(id: id, continuation: continuation))
        }
        timeout.cancel()
        return entered
    }

    /// Leaves `key`: the next waiter, if any, is inside now.
    func leave(_ key: UUID) {
        if var queue = self.waiters[key], !queue.isEmpty {
            let next = queue.removeFirst()
            self.waiters[key] = queue.isEmpty ? nil : queue
            next.continuation.resume(returning: true)
        } else {
            self.busy.remove(key)
        }
    }

    private func expire(_ key: UUID, _ id: UInt64) {
        guard var queue = self.waiters[key], let index = queue.firstIndex(where: { $0.id == id }) else { return }
        let waiter = queue.remove(at: index)
        self.waiters[key] = queue.isEmpty ? nil : queue
        waiter.continuation.resume(returning: false)
    }
}
