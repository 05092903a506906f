import Foundation
import GuestPassObjectStore
import NIOCore
import GuestPassTestSupport
import Testing

/// What only the file system backend promises: the files it leaves, the descriptors it closes, POSIX semantics.
@Suite struct FileSystemBackendTests {
    /// Every file under `root`, relative.
    static func files(under root: URL) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        var files: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(path)
            }
        }
        return files.sorted()
    }

    /// The number of open descriptors of this process.
    /// The process's descriptors open on files under `root`: what the backend holds, whatever other suites running in
    /// parallel open meanwhile (sockets, pipes, their own files elsewhere).
    static func descriptors(under root: URL) throws -> Int {
        let prefix = root.resolvingSymlinksInPath().path
        return try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"))?.hasPrefix(prefix) ?? false
        }.count
    }

    @Test func objectsAreFilesUnderTheRootAndFailuresLeaveNoPartialFile() async throws {
        try await withFileSystemBackend { backend, root in
            let key = "0b1e/c0ffee-1"
            try await put(backend, key, testBytes(10))
            #expect(Self.files(under: root) == [key])
            #expect(try Data(contentsOf: root.appendingPathComponent(key)) == Data(testBytes(10)))

            var cut = ChunkedSource(testBytes(3 << 20), failAfter: (2 << 20) + 1)
            _ = try? await backend.put("0b1e/cut", from: &cut, limit: 1 << 30, contentType: "x/y")
            _ = try? await put(backend, "0b1e/big", testBytes(5000), limit: 4999)
            #expect(Self.files(under: root) == [key])
        }
    }

    @Test func theRootIsCreatedPrivate() async throws {
        try await withFileSystemBackend { backend, root in
            let attributes = try FileManager.default.attributesOfItem(atPath: root.path)
            #expect((attributes[.posixPermissions] as? Int) == 0o700)
            try await put(backend, "app/object", [1])
            let app = try FileManager.default.attributesOfItem(atPath: root.appendingPathComponent("app").path)
            #expect((app[.posixPermissions] as? Int) == 0o700)
            #expect(backend.kind == "file")
        }
    }

    /// POSIX keeps an open inode: a delete after `get` returned does not cut the download.
    @Test func aDeleteAfterOpenDoesNotCutTheDownload() async throws {
        try await withFileSystemBackend { backend, _ in
            let key = freshKey()
            let bytes = testBytes(2 << 20)
            try await put(backend, key, bytes)
            let download = try await backend.get(key, range: nil)
            try await backend.delete(key)
            var received = ByteBuffer()
            try await download.stream { received.writeImmutableBuffer($0) }
            #expect(Array(received.readableBytesView) == bytes)
        }
    }

    /// Every path closes the descriptor: a full read, a sink that throws, a download never streamed. Only the
    /// descriptors on the backend's own files count (the process's total moves with the suites running beside this
    /// one): 100 rounds of 3 downloads would leave 300 open if a path kept its descriptor; none may stay. A dropped
    /// download closes when its last reference goes, which the thread-pool job that opened the file may hold a moment
    /// after the caller resumed (seen on a loaded machine: 1 still open at once, 0 soon after), so the last check
    /// waits for that.
    @Test func downloadsCloseTheirDescriptors() async throws {
        struct Gone: Error {}
        try await withFileSystemBackend { backend, root in
            let key = freshKey()
            try await put(backend, key, testBytes(2 << 20))
            #expect(try Self.descriptors(under: root) == 0)
            do {
                let held = try await backend.get(key, range: nil)
                #expect(try Self.descriptors(under: root) == 1, "a download holds its file open until it is streamed or dropped")
                try await held.stream { _ in }
            }
            for _ in 0..<100 {
                _ = try await read(backend, key)
                let download = try await backend.get(key, range: 5...(1 << 20))
                try? await download.stream { _ in throw Gone() }
                _ = try await backend.get(key, range: nil)  // dropped unstreamed
            }
            let closed = try await eventually(timeout: .seconds(10)) { try Self.descriptors(under: root) == 0 }
            #expect(closed, "\((try? Self.descriptors(under: root)) ?? -1) left open")
        }
    }

    /// A download streams once: a second call fails rather than read a descriptor number the process may have reused.
    @Test func aDownloadStreamsOnce() async throws {
        try await withFileSystemBackend { backend, _ in
            let key = freshKey()
            try await put(backend, key, testBytes(100))
            let download = try await backend.get(key, range: nil)
            try await download.stream { _ in }
            let error = try await backendError { try await download.stream { _ in } }
            #expect(error == .unavailable("download already streamed"))
        }
    }

    @Test func aRangePastTheEndIsRefused() async throws {
        try await withFileSystemBackend { backend, _ in
            let key = freshKey()
            try await put(backend, key, testBytes(100))
            #expect(try await backendError { _ = try await backend.get(key, range: 50...100) } == .unavailable("range outside the object"))
        }
    }

    @Test func aRootThatIsAFileIsRefused() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("guestpass-objectstore-file-\(UUID().uuidString)")
        try Data([1]).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(throws: ObjectBackendError.self) { try FileSystemBackend(root: file.path) }
    }
}
