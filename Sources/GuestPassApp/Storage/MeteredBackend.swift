import Foundation
import GuestPassObjectStore
import NIOCore

/// A backend whose every call is timed and counted (`guestpass_storage_backend_seconds{op,backend}`,
/// `guestpass_storage_backend_errors_total`): the one place the storage routes and the sweeper reach their backend
/// through. Only `.unavailable` counts as an error: `.notFound`, `.tooLarge` and a client's body failing mid-upload
/// are not the store's doing.
struct MeteredBackend: ObjectBackend {
    let base: any ObjectBackend
    var kind: String { self.base.kind }
    var store: String { self.base.store }

    func put(_ key: String, from body: inout some ByteSource, limit: Int64, contentType: String) async throws -> Int64 {
        let start = ContinuousClock.now
        do {
            let size = try await self.base.put(key, from: &body, limit: limit, contentType: contentType)
            self.record("put", since: start, failed: false)
            return size
        } catch {
            self.record("put", since: start, failed: Self.isStoreFailure(error))
            throw error
        }
    }

    func get(_ key: String, range: ClosedRange<Int64>?) async throws -> ObjectDownload {
        try await self.measure("get") { try await self.base.get(key, range: range) }
    }

    func copy(from source: String, to destination: String) async throws {
        try await self.measure("copy") { try await self.base.copy(from: source, to: destination) }
    }

    func delete(_ key: String) async throws {
        try await self.measure("delete") { try await self.base.delete(key) }
    }

    func exists(_ key: String) async throws -> Bool {
        try await self.measure("exists") { try await self.base.exists(key) }
    }

    func shutdown() async throws { try await self.base.shutdown() }

    private func measure<Result: Sendable>(_ operation: String, _ body: () async throws -> Result) async throws -> Result {
        let start = ContinuousClock.now
        do {
            let result = try await body()
            self.record(operation, since: start, failed: false)
            return result
        } catch {
            self.record(operation, since: start, failed: Self.isStoreFailure(error))
            throw error
        }
    }

    private func record(_ operation: String, since start: ContinuousClock.Instant, failed: Bool) {
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        ServiceMetrics.storageBackend(operation, backend: self.base.kind, seconds: seconds, failed: failed)
    }

    private static func isStoreFailure(_ error: any Error) -> Bool {
        guard let error = error as? ObjectBackendError else { return false }
        if case .unavailable = error { return true }
        return false
    }
}
