import Foundation

/// Polls `condition` until it holds or `timeout` passes (every 50 ms); answers whether it held. For state another
/// task reaches in its own time, never for time itself to pass.
public func eventually(timeout: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
