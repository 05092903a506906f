#if canImport(Glibc)
    import Glibc
#endif
import GuestPassCrypto
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Password hashing (scrypt, `PasswordHash`) off the event loops and the task executor, on a pool of its own.
///
/// One scrypt costs 32 MiB and about 100 ms of one core here (`PasswordHashParameters.standard`). The pool runs at most
/// one hash per core at once, so a flood of sign-ins uses at most cores × 32 MiB; its threads run at the lowest
/// priority (SCHED_IDLE, and nice 19), so the event loops, the other routes and PostgreSQL come first when they need a
/// core and the hashes use what is left (`bench/email.sh`: `get_quota`'s p99 during a flood against idle). At most
/// `maxWaiting` more wait their turn, and past that a request is refused at once with 503 and `Retry-After` (before
/// anything was written: safe to retry).
final class PasswordHasher: Sendable {
    /// The one pool of the process: as many threads as cores.
    static let shared = PasswordHasher(threads: System.coreCount, maxWaiting: 64 * System.coreCount)

    /// The niceness of the hashing threads: below the event loops', so a flood of sign-ins yields to everything else.
    static let niceness: Int32 = 19

    private let pool: NIOThreadPool
    private let pending = NIOLockedValueBox(0)
    private let capacity: Int

    init(threads: Int, maxWaiting: Int) {
        self.pool = NIOThreadPool(numberOfThreads: max(1, threads))
        self.pool.start()
        self.capacity = max(1, threads) + maxWaiting
    }

    /// Computes the dummy hash once, in the background, so the first sign-in with an unknown address takes no longer
    /// than any other (`PasswordHash.verifyDummy` makes its hash on first use). Once per process.
    static let warmUp: Void = {
        PasswordHasher.shared.pool.submit { _ in PasswordHash.verifyDummy([]) }
    }()

    /// The scrypt string of `password`.
    func hash(_ password: String) async throws -> String {
        try await self.run { try PasswordHash.hash(Array(password.utf8)) }
    }

    /// Whether `password` matches `stored` (scrypt or an imported bcrypt hash).
    func verify(_ password: String, against stored: String) async throws -> PasswordVerification {
        try await self.run { PasswordHash.verify(Array(password.utf8), against: stored) }
    }

    /// The time of a verification, for an address without an account (no timing oracle).
    func verifyDummy(_ password: String) async throws {
        try await self.run { PasswordHash.verifyDummy(Array(password.utf8)) }
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let admitted = self.pending.withLockedValue { pending in
            guard pending < self.capacity else { return false }
            pending += 1
            return true
        }
        guard admitted else {
            throw APIError(
                .serviceUnavailable, code: GoTrueCode.overRequestRateLimit, message: "Too many password checks at once; retry shortly",
                headers: [.retryAfter: "1"])
        }
        defer { self.pending.withLockedValue { $0 -= 1 } }
        return try await self.pool.runIfActive {
            Self.lowerThisThreadsPriority()
            return try body()
        }
    }

    /// Lowers the calling thread to SCHED_IDLE and niceness `niceness`. On Linux a thread is scheduled on its own, and
    /// `setpriority(PRIO_PROCESS, 0, …)` changes the calling thread only (not its process: man 2 setpriority, "BUGS");
    /// a no-op elsewhere.
    private static func lowerThisThreadsPriority() {
        #if os(Linux)
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, Self.niceness)
            // SCHED_IDLE (5 in <sched.h>; Glibc's module does not import it): the thread runs only when no other wants
            // the core, and is preempted at once when one wakes (a nice 19 thread still finishes its time slice).
            var parameters = sched_param(sched_priority: 0)
            _ = sched_setscheduler(0, 5, &parameters)
        #endif
    }
}
