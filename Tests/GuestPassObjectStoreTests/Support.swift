// The S3 half of these tests needs a running SeaweedFS; from the repository root:
//
//     scripts/seaweedfs start .build/seaweedfs && eval "$(scripts/seaweedfs env .build/seaweedfs)" && swift test --filter GuestPassObjectStoreTests
//
// (`scripts/test` does this for the whole suite.) Without GUESTPASS_TEST_S3_ENDPOINT / _ACCESS_KEY / _SECRET_KEY
// the S3 cases fail, saying so: they are never skipped.
import Foundation
import GuestPassObjectStore
import NIOCore
import Testing

/// A failure of the test set-up (no SeaweedFS), with a message saying what to do.
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The two backends the shared conformance suite runs against.
enum BackendKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case file
    case s3

    var testDescription: String { self.rawValue }
}

/// The bucket the S3 tests use (made by `ensureBucket`).
let testBucket = "guestpass-objectstore-test"

/// SeaweedFS's endpoint and keys from the environment `scripts/seaweedfs start` describes, or a harness error.
func s3Configuration(partSize: Int = S3Configuration.minimumPartSize, secret: String? = nil) throws -> S3Configuration {
    let environment = ProcessInfo.processInfo.environment
    guard let endpoint = environment["GUESTPASS_TEST_S3_ENDPOINT"], !endpoint.isEmpty,
        let accessKey = environment["GUESTPASS_TEST_S3_ACCESS_KEY"], !accessKey.isEmpty,
        let secretKey = environment["GUESTPASS_TEST_S3_SECRET_KEY"], !secretKey.isEmpty
    else {
        throw HarnessError(
            "GUESTPASS_TEST_S3_ENDPOINT/_ACCESS_KEY/_SECRET_KEY are not set: run `scripts/seaweedfs start .build/seaweedfs` and "
                + "`eval \"$(scripts/seaweedfs env .build/seaweedfs)\"` before `swift test` (scripts/test does both)")
    }
    return try S3Configuration(
        endpoint: endpoint, bucket: testBucket, accessKeyID: accessKey, secretAccessKey: secret ?? secretKey, partSize: partSize)
}

/// Runs `body` with an S3 backend (5 MiB parts, the bucket made), shut down afterwards.
func withS3Backend<T>(partSize: Int = S3Configuration.minimumPartSize, _ body: (S3Backend) async throws -> T) async throws -> T {
    let backend = S3Backend(configuration: try s3Configuration(partSize: partSize))
    do {
        try await backend.ensureBucket()
        let result = try await body(backend)
        try await backend.shutdown()
        return result
    } catch {
        try? await backend.shutdown()
        throw error
    }
}

/// Runs `body` with a file system backend in a fresh temporary directory, removed afterwards.
func withFileSystemBackend<T>(_ body: (FileSystemBackend, URL) async throws -> T) async throws -> T {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("guestpass-objectstore-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: root) }
    let backend = try FileSystemBackend(root: root.path)
    return try await body(backend, root)
}

/// Runs `body` with the backend of `kind`.
func withBackend<T>(_ kind: BackendKind, _ body: (any ObjectBackend) async throws -> T) async throws -> T {
    switch kind {
    case .file: try await withFileSystemBackend { backend, _ in try await body(backend) }
    case .s3: try await withS3Backend { backend in try await body(backend) }
    }
}

/// A fresh key shaped like the server's: `<app uuid>/<version uuid>`.
func freshKey() -> String {
    "\(UUID().uuidString.lowercased())/\(UUID().uuidString.lowercased())"
}

/// `count` deterministic, non-repeating-looking bytes (a xorshift stream from `seed`).
func testBytes(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
    var state = seed | 1
    var bytes = [UInt8](repeating: 0, count: count)
    for index in 0..<count {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        bytes[index] = UInt8(truncatingIfNeeded: state)
    }
    return bytes
}

/// A body served in chunks of `chunkSize`; with `failAfter`, throws once that many bytes have been served.
struct ChunkedSource: ByteSource {
    struct Cut: Error {}

    let bytes: [UInt8]
    var chunkSize = 64 << 10
    var failAfter: Int?
    private(set) var offset = 0

    init(_ bytes: [UInt8], chunkSize: Int = 64 << 10, failAfter: Int? = nil) {
        self.bytes = bytes
        self.chunkSize = chunkSize
        self.failAfter = failAfter
    }

    mutating func next() async throws -> ByteBuffer? {
        if let failAfter, self.offset >= failAfter { throw Cut() }
        guard self.offset < self.bytes.count else { return nil }
        let end = min(self.offset + self.chunkSize, self.bytes.count)
        defer { self.offset = end }
        return ByteBuffer(bytes: self.bytes[self.offset..<end])
    }
}

/// Puts `bytes` under `key`, in chunks of `chunkSize`.
@discardableResult
func put(_ backend: any ObjectBackend, _ key: String, _ bytes: [UInt8], limit: Int64 = 1 << 40, chunkSize: Int = 64 << 10) async throws
    -> Int64
{
    var source = ChunkedSource(bytes, chunkSize: chunkSize)
    return try await backend.put(key, from: &source, limit: limit, contentType: "application/octet-stream")
}

/// The bytes of `key` (or of `range` of it), checking the announced length.
func read(_ backend: any ObjectBackend, _ key: String, range: ClosedRange<Int64>? = nil) async throws -> [UInt8] {
    let download = try await backend.get(key, range: range)
    var received = ByteBuffer()
    try await download.stream { chunk in received.writeImmutableBuffer(chunk) }
    guard Int64(received.readableBytes) == download.contentLength else {
        throw HarnessError("announced \(download.contentLength) bytes, streamed \(received.readableBytes)")
    }
    return Array(received.readableBytesView)
}

/// The `ObjectBackendError` `body` throws, or nil (another error is rethrown).
func backendError(_ body: () async throws -> Void) async throws -> ObjectBackendError? {
    do {
        try await body()
        return nil
    } catch let error as ObjectBackendError {
        return error
    }
}
