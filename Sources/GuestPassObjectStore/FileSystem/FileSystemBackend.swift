import NIOCore
public import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Objects as files under one data directory: `<root>/<key>`, one file per key.
///
/// Design: a `put` streams into `.<name>.partial-<random>` beside the final name (batching the body into writes of
/// `writeBatchSize`), then `fsync`s the file, renames it over the final name and `fsync`s the directory before it
/// returns, so an acknowledged object survives a crash and a reader never sees half a file. A `get` opens the file
/// before it answers, so a concurrent `delete` (or a replacing `put`) does not cut a download short: the open
/// descriptor keeps the old inode. Every system call runs on a thread pool (`NIOThreadPool.singleton` by default);
/// no body is held whole in memory (at most one batch on upload; a chunk being sent and one read ahead on download).
///
/// Limits: keys must pass the module's key check (`[A-Za-z0-9/_.-]`, no `..`, no leading `/`, no dot segment);
/// directories are made on demand (mode 0700) and never removed; a crash mid-upload leaves a `.partial-` file that
/// no key names, which `delete` of its key removes (the caller's pending record lets the sweep find the key).
public struct FileSystemBackend: ObjectBackend {
    /// The data directory, absolute and without a trailing slash.
    public let root: String
    /// How many body bytes a `put` gathers before one `write(2)`.
    public static let writeBatchSize = 1 << 20
    /// How many bytes a `get` reads per `pread(2)` (one chunk to the sink, the next read ahead).
    public static let readChunkSize = 512 << 10
    /// How many bytes a `copy` moves per thread-pool job.
    static let copyChunkSize = 1 << 20

    public var kind: String { "file" }
    public var store: String { "file:\(self.root)" }

    private let io: BlockingIO

    /// Uses (and creates, mode 0700, with its parents) the directory `root`. Blocking: call it at start-up.
    /// - Throws: `ObjectBackendError.unavailable` when `root` cannot be made or is not a directory.
    public init(root: String, threadPool: NIOThreadPool = .singleton) throws(ObjectBackendError) {
        guard !root.isEmpty, !root.utf8.contains(0) else { throw .unavailable("invalid root") }
        var prefix = root.hasPrefix("/") ? "" : "."
        for segment in root.split(separator: "/") {
            prefix += "/" + segment
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw POSIX.failure("mkdir") }
        }
        guard let resolved = realpath(root, nil) else { throw POSIX.failure("realpath") }
        defer { free(resolved) }
        self.root = String(cString: resolved)
        var status = stat()
        guard stat(self.root, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else { throw .unavailable("root is not a directory") }
        self.io = BlockingIO(pool: threadPool)
    }

    /// The path of `key` (which must be valid).
    func path(of key: String) -> String {
        "\(self.root)/\(key)"
    }

    /// Writes overlap the body's arrival: a batch is written on the thread pool while the next one is read from the
    /// socket (at most one write in flight, so at most two batches in memory).
    public func put(_ key: String, from body: inout some ByteSource, limit: Int64, contentType: String) async throws -> Int64 {
        try ObjectKey.validate(key)
        let target = try await self.createTemporary(for: key)
        var inFlight: Task<Void, any Error>?
        do {
            var total: Int64 = 0
            var batch = ByteBuffer()
            while var chunk = try await body.next() {
                total += Int64(chunk.readableBytes)
                if total > limit { throw ObjectBackendError.tooLarge(limit: limit) }
                if batch.readableBytes == 0 && chunk.readableBytes >= Self.writeBatchSize {
                    try await inFlight?.value
                    inFlight = self.startWrite(chunk, to: target.file)
                    continue
                }
                if batch.readableBytes == 0 { batch.reserveCapacity(Self.writeBatchSize + chunk.readableBytes) }
                batch.writeBuffer(&chunk)
                if batch.readableBytes >= Self.writeBatchSize {
                    try await inFlight?.value
                    inFlight = self.startWrite(batch, to: target.file)
                    batch = ByteBuffer()
                }
            }
            try await inFlight?.value
            inFlight = nil
            if batch.readableBytes > 0 { try await self.write(batch, to: target.file) }
            try await self.commit(target)
            return total
        } catch {
            // The descriptor is closed only once no write uses it.
            _ = try? await inFlight?.value
            await self.abandon(target)
            throw error
        }
    }

    /// One batch's write, started on the thread pool.
    private func startWrite(_ buffer: ByteBuffer, to file: FileDescriptor) -> Task<Void, any Error> {
        let io = self.io
        return Task { try await io.run { try buffer.withUnsafeReadableBytes { bytes in try POSIX.writeAll(file.fd, bytes) } } }
    }

    public func get(_ key: String, range: ClosedRange<Int64>?) async throws -> ObjectDownload {
        try ObjectKey.validate(key)
        let path = self.path(of: key)
        let (file, size) = try await self.io.run {
            let file = FileDescriptor(try POSIX.openFile(path, O_RDONLY, missingIsNotFound: true))
            return (file, try POSIX.regularFileSize(file.fd))
        }
        let start = range?.lowerBound ?? 0
        let end = (range?.upperBound ?? size - 1) + 1
        if let range, range.lowerBound < 0 || range.upperBound >= size {
            file.close()
            throw ObjectBackendError.unavailable("range outside the object")
        }
        let io = self.io
        return ObjectDownload(contentLength: end - start) { sink in
            try await Self.stream(file, from: start, to: end, io: io, sink: sink)
        }
    }

    public func copy(from source: String, to destination: String) async throws {
        try ObjectKey.validate(source)
        try ObjectKey.validate(destination)
        let sourcePath = self.path(of: source)
        let (input, size) = try await self.io.run {
            let file = FileDescriptor(try POSIX.openFile(sourcePath, O_RDONLY, missingIsNotFound: true))
            return (file, try POSIX.regularFileSize(file.fd))
        }
        defer { input.close() }
        let target = try await self.createTemporary(for: destination)
        do {
            var offset: Int64 = 0
            while offset < size {
                let count = Int(min(Int64(Self.copyChunkSize), size - offset))
                let from = offset
                try await self.io.run { try Self.copyChunk(from: input.fd, to: target.file.fd, offset: from, count: count) }
                offset += Int64(count)
            }
            try await self.commit(target)
        } catch {
            await self.abandon(target)
            throw error
        }
    }

    /// Removes the key's file and any `.partial-` file a crash left for it (the sweep deletes an orphaned upload's key).
    public func delete(_ key: String) async throws {
        try ObjectKey.validate(key)
        let path = self.path(of: key)
        try await self.io.run {
            try POSIX.unlinkIfPresent(path)
            try POSIX.unlinkPartials(of: path)
        }
    }

    public func exists(_ key: String) async throws -> Bool {
        try ObjectKey.validate(key)
        let path = self.path(of: key)
        return try await self.io.run { try POSIX.isRegularFile(path) }
    }

    // MARK: Writing through a temporary file

    /// A `.partial-` file being written, and where it goes.
    struct Temporary: Sendable {
        let file: FileDescriptor
        let temporaryPath: String
        let finalPath: String
        let directory: String
    }

    /// Makes the key's directories and opens a fresh temporary file beside its final path.
    private func createTemporary(for key: String) async throws -> Temporary {
        let finalPath = self.path(of: key)
        guard let slash = finalPath.utf8.lastIndex(of: UInt8(ascii: "/")) else { throw ObjectBackendError.unavailable("invalid key") }
        let directory = String(finalPath[..<slash])
        let name = finalPath[finalPath.utf8.index(after: slash)...]
        let temporaryPath = "\(directory)/.\(name).partial-\(String(UInt64.random(in: .min ... .max), radix: 16))"
        let root = self.root
        let file = try await self.io.run {
            try POSIX.makeDirectories(directory, under: root)
            return FileDescriptor(try POSIX.openFile(temporaryPath, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600))
        }
        return Temporary(file: file, temporaryPath: temporaryPath, finalPath: finalPath, directory: directory)
    }

    private func write(_ buffer: ByteBuffer, to file: FileDescriptor) async throws {
        try await self.io.run {
            try buffer.withUnsafeReadableBytes { bytes in try POSIX.writeAll(file.fd, bytes) }
        }
    }

    /// fsync, close, rename over the final name, fsync the directory: one job, so cancellation cannot split it. When
    /// the directory's fsync fails the renamed file is removed again (the put failed, nothing is left).
    private func commit(_ target: Temporary) async throws {
        try await self.io.run {
            try POSIX.syncFile(target.file.fd)
            target.file.close()
            try POSIX.renameFile(target.temporaryPath, target.finalPath)
            do {
                try POSIX.fsyncDirectory(target.directory)
            } catch {
                try? POSIX.unlinkIfPresent(target.finalPath)
                throw error
            }
        }
    }

    /// Closes and removes the temporary file of a failed write (even in a cancelled task).
    private func abandon(_ target: Temporary) async {
        await self.io.cleanUp {
            target.file.close()
            try? POSIX.unlinkIfPresent(target.temporaryPath)
        }
    }

    private static func copyChunk(from input: Int32, to output: Int32, offset: Int64, count: Int) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        defer { buffer.deallocate() }
        let read = try POSIX.preadFull(input, buffer, offset: offset)
        guard read == count else { throw ObjectBackendError.unavailable("source shorter than expected") }
        try POSIX.writeAll(output, UnsafeRawBufferPointer(buffer))
    }

    // MARK: Reading

    /// Sends `[start, end)` of `file` to `sink` in `readChunkSize` pieces, reading the next piece while the sink takes
    /// the current one; closes the file on every path (after the read-ahead job has finished).
    private static func stream(
        _ file: FileDescriptor, from start: Int64, to end: Int64, io: BlockingIO, sink: (ByteBuffer) async throws -> Void
    ) async throws {
        func read(at offset: Int64) -> Task<ByteBuffer, any Error> {
            let count = Int(min(Int64(Self.readChunkSize), end - offset))
            return Task {
                try await io.run {
                    var buffer = ByteBufferAllocator().buffer(capacity: count)
                    let read = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
                        try POSIX.preadFull(file.fd, UnsafeMutableRawBufferPointer(rebasing: bytes[..<count]), offset: offset)
                    }
                    guard read == count else { throw ObjectBackendError.unavailable("file shorter than expected") }
                    return buffer
                }
            }
        }
        guard !file.isClosed else { throw ObjectBackendError.unavailable("download already streamed") }
        var offset = start
        var pending = offset < end ? read(at: offset) : nil
        do {
            while let current = pending {
                let buffer = try await current.value
                offset += Int64(buffer.readableBytes)
                pending = offset < end ? read(at: offset) : nil
                try await sink(buffer)
            }
        } catch {
            if let pending { _ = try? await pending.value }
            file.close()
            throw error
        }
        file.close()
    }
}
