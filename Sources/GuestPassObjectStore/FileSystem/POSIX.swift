#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The few blocking system calls of `FileSystemBackend`, each retried on `EINTR` and reported as
/// `ObjectBackendError.unavailable("<call>: <strerror>")` (no path in the text). Run them on a thread pool, never on
/// an event loop.
enum POSIX {
    /// The error for the failed `call`, from the thread's `errno`.
    static func failure(_ call: String, _ code: Int32 = errno) -> ObjectBackendError {
        .unavailable("\(call): \(String(cString: strerror(code)))")
    }

    /// `open(2)` with `O_CLOEXEC`; `ENOENT` is `.notFound` when `missingIsNotFound`.
    static func openFile(_ path: String, _ flags: Int32, mode: mode_t = 0o600, missingIsNotFound: Bool = false) throws(ObjectBackendError)
        -> Int32
    {
        while true {
            let fd = open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            if errno == ENOENT && missingIsNotFound { throw .notFound }
            throw Self.failure("open")
        }
    }

    /// `close(2)`; the result is ignored (the descriptor is gone either way; data loss shows in `fsync`).
    static func closeFile(_ fd: Int32) {
        _ = close(fd)
    }

    /// Writes all of `bytes` at the file's offset.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(ObjectBackendError) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let written = write(fd, base + done, bytes.count - done)
            if written < 0 {
                if errno == EINTR { continue }
                throw Self.failure("write")
            }
            done += written
        }
    }

    /// Reads up to `buffer.count` bytes at `offset`, stopping early only at the end of the file; returns the count.
    static func preadFull(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int64) throws(ObjectBackendError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let count = pread(fd, base + done, buffer.count - done, off_t(offset) + off_t(done))
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.failure("pread")
            }
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// `fsync(2)`.
    static func syncFile(_ fd: Int32) throws(ObjectBackendError) {
        while fsync(fd) != 0 {
            if errno == EINTR { continue }
            throw Self.failure("fsync")
        }
    }

    /// Opens the directory at `path`, fsyncs it (so its new entries survive a crash) and closes it.
    static func fsyncDirectory(_ path: String) throws(ObjectBackendError) {
        let fd = try Self.openFile(path, O_RDONLY | O_DIRECTORY)
        defer { Self.closeFile(fd) }
        try Self.syncFile(fd)
    }

    /// The size of the open regular file `fd`; refuses anything else (a directory at an object's path).
    static func regularFileSize(_ fd: Int32) throws(ObjectBackendError) -> Int64 {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw Self.failure("fstat") }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw .notFound }
        return Int64(status.st_size)
    }

    /// Whether a regular file is at `path`.
    static func isRegularFile(_ path: String) throws(ObjectBackendError) -> Bool {
        var status = stat()
        if stat(path, &status) == 0 { return (status.st_mode & S_IFMT) == S_IFREG }
        if errno == ENOENT || errno == ENOTDIR { return false }
        throw Self.failure("stat")
    }

    /// `rename(2)` (atomic within one file system).
    static func renameFile(_ from: String, _ to: String) throws(ObjectBackendError) {
        guard rename(from, to) == 0 else { throw Self.failure("rename") }
    }

    /// `unlink(2)`; a missing file is not an error.
    static func unlinkIfPresent(_ path: String) throws(ObjectBackendError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw Self.failure("unlink") }
    }

    /// Unlinks every `.<name>.partial-*` beside `path` (what an interrupted `put` of it left).
    static func unlinkPartials(of path: String) throws(ObjectBackendError) {
        guard let slash = path.lastIndex(of: "/") else { return }
        let directory = String(path[..<slash])
        let prefix = "." + path[path.index(after: slash)...] + ".partial-"
        guard let stream = opendir(directory) else {
            if errno == ENOENT { return }
            throw Self.failure("opendir")
        }
        defer { closedir(stream) }
        var doomed: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(prefix) { doomed.append(directory + "/" + name) }
        }
        for file in doomed { try Self.unlinkIfPresent(file) }
    }

    /// Creates `path` and its missing parents (mode 0700), fsyncing each parent that gains an entry; the parents from
    /// `root` up must exist.
    static func makeDirectories(_ path: String, under root: String) throws(ObjectBackendError) {
        var status = stat()
        if stat(path, &status) == 0 {
            guard (status.st_mode & S_IFMT) == S_IFDIR else { throw .unavailable("mkdir: not a directory") }
            return
        }
        guard path.count > root.count, let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else {
            throw Self.failure("stat")
        }
        let parent = String(path[..<slash])
        try Self.makeDirectories(parent, under: root)
        if mkdir(path, 0o700) != 0 {
            if errno == EEXIST { return }  // made by a concurrent put
            throw Self.failure("mkdir")
        }
        try Self.fsyncDirectory(parent)
    }
}
