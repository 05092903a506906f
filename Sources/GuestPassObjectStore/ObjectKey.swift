/// The one check every backend applies to a key before it touches a path or a URL.
///
/// Keys are server-made (`<app uuid>/<version uuid>`), but a backend does not trust that: a key is refused unless it
/// is 1–1024 bytes of `[A-Za-z0-9/_.-]`, does not start or end with `/`, has no empty segment (`//`) and no segment
/// that starts with `.` (so no `.`/`..`, no way out of the root, and no clash with the file system backend's
/// `.<name>.partial-*` temporary files). The refusal is `ObjectBackendError.unavailable("invalid key")`; the key
/// itself is not echoed.
enum ObjectKey {
    /// The longest key accepted, in bytes (S3's own limit).
    static let maximumLength = 1024

    /// Throws `.unavailable("invalid key")` unless `key` is a safe relative path as described above.
    static func validate(_ key: String) throws(ObjectBackendError) {
        guard Self.isValid(key) else { throw .unavailable("invalid key") }
    }

    /// Whether `key` passes `validate`.
    static func isValid(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maximumLength else { return false }
        guard bytes.allSatisfy(Self.isAllowed) else { return false }
        guard !key.contains("..") else { return false }
        for segment in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            guard let first = segment.first, first != UInt8(ascii: ".") else { return false }
        }
        return true
    }

    /// The segments of a valid key, in order.
    static func segments(_ key: String) -> [Substring] {
        key.split(separator: "/", omittingEmptySubsequences: false)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "/"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}
