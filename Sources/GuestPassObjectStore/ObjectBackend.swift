public import NIOCore

/// Where an object's bytes live: the local file system (one machine) or an S3-compatible store (past one machine).
///
/// Design: a backend knows nothing of buckets, owners or row-level security. It stores immutable blobs under opaque
/// keys that the server makes (`<app id>/<version uuid>`, never a client's text), so no client path can reach the
/// file system or another tenant's prefix. Every upload writes a fresh key; the database row decides which key is
/// live. A `put` returns only once the bytes are durable (fsync on disk; the store's 200 on S3). `delete` of a missing
/// key succeeds, so a retried delete is harmless.
public protocol ObjectBackend: Sendable {
    /// Streams `body` to `key`. Throws `ObjectBackendError.tooLarge` as soon as more than `limit` bytes arrive
    /// (nothing is left behind then); any other failure also leaves nothing behind (best effort; the caller records
    /// the key as pending first, so `guestpass prune` reclaims what a crash leaves).
    /// - Returns: the number of bytes stored.
    func put(_ key: String, from body: inout some ByteSource, limit: Int64, contentType: String) async throws -> Int64

    /// Opens `key` for reading, whole or `range` (inclusive offsets, already checked against the size the row
    /// records). Throws `ObjectBackendError.notFound` when the key has no bytes.
    func get(_ key: String, range: ClosedRange<Int64>?) async throws -> ObjectDownload

    /// Copies the bytes of `source` to the new key `destination` (move and copy write a fresh version).
    func copy(from source: String, to destination: String) async throws

    /// Removes `key`; a missing key is not an error.
    func delete(_ key: String) async throws

    /// Whether `key` has bytes (tests and the orphan sweep).
    func exists(_ key: String) async throws -> Bool

    /// A short name for metrics and logs: `file` or `s3`.
    var kind: String { get }

    /// Which store the bytes are in: `file:<resolved root>` or `s3:<endpoint>/<bucket>`. Every server of a deployment
    /// shares it; objects and the sweep's keys record it, so a server only ever deletes bytes of its own store.
    var store: String { get }

    /// Releases what the backend holds (S3: its HTTP client). Call it once, after the last request.
    func shutdown() async throws
}

extension ObjectBackend {
    /// Nothing to release.
    public func shutdown() async throws {}
}

/// A body read once, chunk by chunk (a request body, or the file part of a multipart form).
public protocol ByteSource {
    /// The next chunk, or nil at the end. Throws when the client's body is cut short or malformed.
    mutating func next() async throws -> ByteBuffer?
}

/// Bytes being read from a backend: their count and a function that streams them, in order, to `sink`.
public struct ObjectDownload: Sendable {
    /// The number of bytes `stream` delivers (the range's length for a range).
    public let contentLength: Int64
    /// Streams the bytes to `sink`, then releases what it holds (a file descriptor, an HTTP connection), on every
    /// path. Call it once.
    public let stream: @Sendable (_ sink: (ByteBuffer) async throws -> Void) async throws -> Void

    public init(contentLength: Int64, stream: @escaping @Sendable (_ sink: (ByteBuffer) async throws -> Void) async throws -> Void) {
        self.contentLength = contentLength
        self.stream = stream
    }
}

/// What a backend can refuse or fail with.
public enum ObjectBackendError: Error, Equatable, Sendable {
    /// More bytes than the limit arrived.
    case tooLarge(limit: Int64)
    /// The key has no bytes.
    case notFound
    /// The store failed or answered something unexpected (status, a short reason); never carries credentials.
    case unavailable(String)
}
