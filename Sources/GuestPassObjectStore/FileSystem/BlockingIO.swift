import NIOPosix

/// Runs blocking system calls on a thread pool, off the event loops.
struct BlockingIO: Sendable {
    let pool: NIOThreadPool

    /// Runs `body` on the pool. Throws what `body` throws, `CancellationError` when the task was cancelled before the
    /// job started (the job then never runs), or `.unavailable` when the pool is stopped.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await self.pool.runIfActive(body)
        } catch is NIOThreadPoolError.ThreadPoolInactive {
            throw ObjectBackendError.unavailable("thread pool stopped")
        }
    }

    /// Runs clean-up work (close, unlink) that must happen even in a cancelled task: on the pool when it can,
    /// else inline (these calls are short).
    func cleanUp(_ body: @escaping @Sendable () -> Void) async {
        do {
            try await self.pool.runIfActive(body)
        } catch {
            body()
        }
    }
}

/// An open file descriptor, closed exactly once: by `close()` or, failing that, when the last reference goes.
///
/// Used by one task at a time: every use is a thread-pool job that the owner awaits before the next one (a download's
/// read-ahead job is awaited before `close()`), hence `@unchecked Sendable`.
final class FileDescriptor: @unchecked Sendable {
    let fd: Int32
    private var isOpen = true

    init(_ fd: Int32) {
        self.fd = fd
    }

    /// Whether `close()` has run (a second `stream` of a download then fails instead of reading a reused number).
    var isClosed: Bool { !self.isOpen }

    func close() {
        guard self.isOpen else { return }
        self.isOpen = false
        POSIX.closeFile(self.fd)
    }

    deinit {
        self.close()
    }
}
