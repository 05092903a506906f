import GuestPassObjectStore
import NIOCore
import Testing

/// The `ObjectBackend` contract, run against both backends: the file system (a temporary directory) and S3 (a real
/// SeaweedFS, 5 MiB parts; see Support.swift for how to start it).
@Suite struct ConformanceTests {
    /// Sizes around the interesting edges; 12 MiB + 3 is a three-part multipart upload on S3 (5 MiB parts), 5 MiB
    /// exactly one PutObject.
    static let sizes = [0, 1, (1 << 20) + 1, 5 << 20, (12 << 20) + 3]

    @Test(arguments: BackendKind.allCases, Self.sizes)
    func putThenGetReturnsTheSameBytes(_ kind: BackendKind, size: Int) async throws {
        try await withBackend(kind) { backend in
            let key = freshKey()
            let bytes = testBytes(size, seed: UInt64(size) &+ 11)
            #expect(try await put(backend, key, bytes, chunkSize: 100_000) == Int64(size))
            #expect(try await backend.exists(key))
            let back = try await read(backend, key)
            #expect(back.count == size)
            #expect(back == bytes)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func rangesReturnTheirBytes(_ kind: BackendKind) async throws {
        try await withBackend(kind) { backend in
            let key = freshKey()
            let bytes = testBytes(3 << 20)
            try await put(backend, key, bytes)
            for range: ClosedRange<Int64> in [0...9, 0...0, 1_000_000...2_500_000, Int64(bytes.count - 1)...Int64(bytes.count - 1)] {
                let download = try await backend.get(key, range: range)
                #expect(download.contentLength == range.upperBound - range.lowerBound + 1)
                #expect(try await read(backend, key, range: range) == Array(bytes[Int(range.lowerBound)...Int(range.upperBound)]))
            }
        }
    }

    /// A limit of N takes N bytes and refuses N + 1 the moment it arrives, leaving nothing (on S3: also no multipart
    /// upload in progress, as the body passes two parts before it is refused).
    @Test(arguments: BackendKind.allCases)
    func tooLargeAtLimitPlusOneLeavesNothing(_ kind: BackendKind) async throws {
        try await withBackend(kind) { backend in
            let limit = (11 << 20) + 7
            let exact = freshKey()
            #expect(try await put(backend, exact, testBytes(limit), limit: Int64(limit)) == Int64(limit))
            let over = freshKey()
            let error = try await backendError { try await put(backend, over, testBytes(limit + 1), limit: Int64(limit)) }
            #expect(error == .tooLarge(limit: Int64(limit)))
            #expect(try await backend.exists(over) == false)
            #expect(try await backendError { _ = try await read(backend, over) } == .notFound)
            if let s3 = backend as? S3Backend {
                #expect(try await s3.multipartUploadsInProgress(prefix: over).isEmpty)
            }
        }
    }

    /// The limit counts bytes as they arrive: a source that would go on for ever is refused after limit + 1.
    @Test(arguments: BackendKind.allCases)
    func tooLargeStopsReadingTheSource(_ kind: BackendKind) async throws {
        struct Endless: ByteSource {
            var served = 0
            mutating func next() async throws -> ByteBuffer? {
                self.served += 1
                return ByteBuffer(repeating: 0x61, count: 1000)
            }
        }
        try await withBackend(kind) { backend in
            var source = Endless()
            let error = try await backendError { _ = try await backend.put(freshKey(), from: &source, limit: 10_000, contentType: "text/plain") }
            #expect(error == .tooLarge(limit: 10_000))
            #expect(source.served == 11)
        }
    }

    /// A body cut mid-stream (a client gone) fails the put with the source's error and leaves nothing.
    @Test(arguments: BackendKind.allCases, [100_000, (7 << 20) + 5])
    func aSourceThatThrowsLeavesNothing(_ kind: BackendKind, failAfter: Int) async throws {
        try await withBackend(kind) { backend in
            let key = freshKey()
            var source = ChunkedSource(testBytes(12 << 20), failAfter: failAfter)
            do {
                _ = try await backend.put(key, from: &source, limit: 1 << 30, contentType: "application/octet-stream")
                Issue.record("the put succeeded")
            } catch {
                #expect(error is ChunkedSource.Cut, "\(error)")
            }
            let stored = try await backend.exists(key)
            #expect(!stored)
            if let s3 = backend as? S3Backend {
                #expect(try await s3.multipartUploadsInProgress(prefix: key).isEmpty)
            }
        }
    }

    @Test(arguments: BackendKind.allCases, [10, (6 << 20) + 1])
    func copyMakesAnIndependentObject(_ kind: BackendKind, size: Int) async throws {
        try await withBackend(kind) { backend in
            let source = freshKey()
            let destination = freshKey()
            let bytes = testBytes(size, seed: 42)
            try await put(backend, source, bytes)
            try await backend.copy(from: source, to: destination)
            try await backend.delete(source)
            #expect(try await read(backend, destination) == bytes)
            #expect(try await backendError { try await backend.copy(from: freshKey(), to: freshKey()) } == .notFound)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func deleteThenGetIsNotFoundAndDeletingTwiceSucceeds(_ kind: BackendKind) async throws {
        try await withBackend(kind) { backend in
            let key = freshKey()
            try await put(backend, key, testBytes(1000))
            try await backend.delete(key)
            #expect(try await backend.exists(key) == false)
            #expect(try await backendError { _ = try await backend.get(key, range: nil) } == .notFound)
            try await backend.delete(key)
            try await backend.delete(freshKey())
        }
    }

    /// A later put to the same key replaces the bytes whole.
    @Test(arguments: BackendKind.allCases)
    func aSecondPutReplacesTheBytes(_ kind: BackendKind) async throws {
        try await withBackend(kind) { backend in
            let key = freshKey()
            try await put(backend, key, testBytes(5000, seed: 1))
            try await put(backend, key, testBytes(300, seed: 2))
            #expect(try await read(backend, key) == testBytes(300, seed: 2))
        }
    }

    static let invalidKeys = [
        "", "/abs/key", "../escape", "a/../../b", "a/..", "a..b", "a//b", "a/", "a/.hidden", "./a", "a\u{0}b", "a b", "a\\b",
        "é", "a?b", "a%2Fb", String(repeating: "a", count: 1025),
    ]

    @Test(arguments: BackendKind.allCases)
    func unsafeKeysAreRefusedByEveryOperation(_ kind: BackendKind) async throws {
        try await withBackend(kind) { backend in
            let good = freshKey()
            try await put(backend, good, [1, 2, 3])
            for key in Self.invalidKeys {
                let refused = ObjectBackendError.unavailable("invalid key")
                #expect(try await backendError { try await put(backend, key, [1]) } == refused, "put \(key.debugDescription)")
                #expect(try await backendError { _ = try await backend.get(key, range: nil) } == refused)
                #expect(try await backendError { _ = try await backend.exists(key) } == refused)
                #expect(try await backendError { try await backend.delete(key) } == refused)
                #expect(try await backendError { try await backend.copy(from: good, to: key) } == refused)
                #expect(try await backendError { try await backend.copy(from: key, to: freshKey()) } == refused)
            }
        }
    }

    @Test(arguments: BackendKind.allCases)
    func concurrentPutsToDifferentKeys(_ kind: BackendKind) async throws {
        try await withBackend(kind) { backend in
            let keys = (0..<8).map { _ in freshKey() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, key) in keys.enumerated() {
                    group.addTask { try await put(backend, key, testBytes(300_000 + index, seed: UInt64(index) + 1), chunkSize: 8192) }
                }
                try await group.waitForAll()
            }
            for (index, key) in keys.enumerated() {
                #expect(try await read(backend, key) == testBytes(300_000 + index, seed: UInt64(index) + 1))
            }
        }
    }

    /// A sink that throws (the client went away) ends the download with its error; the object is still readable.
    @Test(arguments: BackendKind.allCases)
    func aSinkThatThrowsEndsTheDownload(_ kind: BackendKind) async throws {
        struct Gone: Error {}
        try await withBackend(kind) { backend in
            let key = freshKey()
            let bytes = testBytes(3 << 20)
            try await put(backend, key, bytes)
            let download = try await backend.get(key, range: nil)
            await #expect(throws: Gone.self) { try await download.stream { _ in throw Gone() } }
            #expect(try await read(backend, key) == bytes)
        }
    }
}
