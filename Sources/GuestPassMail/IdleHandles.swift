import Foundation

/// The easy handles (and so the open SMTP connections) not in use, by the settings they were made for; bounded.
///
/// **Design.** `take` answers the most recently used handle for the settings (a warm connection is the likeliest to
/// be alive); `put` keeps at most `perSettings` handles per settings and `total` in all, dropping the least recently
/// used, and any handle idle longer than `maxIdle` is dropped at the next `take` or `put`. A dropped handle is freed
/// (`curl_easy_cleanup`, which may wait for the reply to `QUIT`) after the lock is released, on the caller's thread:
/// `SMTPClient` calls these only on its own blocking threads.
///
/// `@unchecked Sendable`: every access to the dictionary is under `lock`, and a handle is in the dictionary or with
/// exactly one sender, never both.
final class IdleHandles: @unchecked Sendable {
    private let lock = NSLock()
    private var handles: [SMTPSettings: [CurlEasyHandle]] = [:]
    private var count = 0
    let perSettings: Int
    let total: Int
    let maxIdle: Duration

    init(perSettings: Int, total: Int, maxIdle: Duration) {
        self.perSettings = perSettings
        self.total = total
        self.maxIdle = maxIdle
    }

    /// An idle handle for `settings`, if there is one.
    func take(for settings: SMTPSettings) -> CurlEasyHandle? {
        var dropped: [CurlEasyHandle] = []
        let handle = self.lock.withLock { () -> CurlEasyHandle? in
            dropped = self.dropExpired()
            guard let handle = self.handles[settings]?.popLast() else { return nil }
            self.count -= 1
            return handle
        }
        withExtendedLifetime(dropped) {}
        return handle
    }

    /// Keeps `handle` (which just finished a send) for the next send with the same settings.
    func put(_ handle: CurlEasyHandle) {
        var dropped: [CurlEasyHandle] = []
        self.lock.withLock {
            dropped = self.dropExpired()
            self.handles[handle.settings, default: []].append(handle)
            self.count += 1
            if self.handles[handle.settings]!.count > self.perSettings {
                dropped.append(self.handles[handle.settings]!.removeFirst())
                self.count -= 1
            }
            while self.count > self.total, let oldest = self.leastRecentlyUsed() {
                dropped.append(self.handles[oldest]!.removeFirst())
                if self.handles[oldest]!.isEmpty { self.handles[oldest] = nil }
                self.count -= 1
            }
        }
        withExtendedLifetime(dropped) {}
    }

    /// Drops every idle handle (at shutdown).
    func removeAll() {
        let dropped = self.lock.withLock {
            let all = self.handles.values.flatMap { $0 }
            self.handles = [:]
            self.count = 0
            return all
        }
        withExtendedLifetime(dropped) {}
    }

    /// The number of idle handles.
    var idleCount: Int { self.lock.withLock { self.count } }

    /// Removes and answers the handles idle longer than `maxIdle`. Call with `lock` held.
    private func dropExpired() -> [CurlEasyHandle] {
        let cutoff = ContinuousClock.now - self.maxIdle
        var expired: [CurlEasyHandle] = []
        for (settings, list) in self.handles {
            let keep = list.filter { $0.lastUsed >= cutoff }
            guard keep.count != list.count else { continue }
            expired += list.filter { $0.lastUsed < cutoff }
            self.handles[settings] = keep.isEmpty ? nil : keep
            self.count -= list.count - keep.count
        }
        return expired
    }

    /// The settings whose oldest idle handle is the oldest of all. Call with `lock` held.
    private func leastRecentlyUsed() -> SMTPSettings? {
        self.handles.compactMap { settings, list in list.first.map { (settings, $0.lastUsed) } }
            .min { $0.1 < $1.1 }?.0
    }
}
