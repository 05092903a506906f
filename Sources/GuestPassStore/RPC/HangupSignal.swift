import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// SIGHUP as an async sequence per subscriber. One signal source per process (a process may run several
/// applications, e.g. the tests), installed on the first subscription and kept: SIGHUP stays ignored by default
/// afterwards, so a hang-up between two subscriptions never kills the process. Subscribers are services
/// (`SchemaReloadListener`): their loop ends when they shut down, and their subscription with it.
///
/// `@unchecked Sendable`: its state is only touched under `lock`.
final class HangupSignal: @unchecked Sendable {
    static let shared = HangupSignal()

    private let lock = NIOLock()
    private var subscribers: [UUID: AsyncStream<Void>.Continuation] = [:]
    private var source: (any DispatchSourceSignal)?

    /// Yields once per SIGHUP received while it is being iterated.
    func signals() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in self?.lock.withLock { _ = self?.subscribers.removeValue(forKey: id) } }
        self.lock.withLock {
            self.subscribers[id] = continuation
            guard self.source == nil else { return }
            signal(SIGHUP, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: SIGHUP)
            source.setEventHandler { [weak self] in self?.broadcast() }
            source.resume()
            self.source = source
        }
        return stream
    }

    private func broadcast() {
        let live = self.lock.withLock { Array(self.subscribers.values) }
        for continuation in live { continuation.yield() }
    }
}
