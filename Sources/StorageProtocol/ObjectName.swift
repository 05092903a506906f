/// Supabase Storage's rules for object keys and bucket names, checked before any SQL or byte moves.
///
/// Keys may hold only the characters Supabase accepts (ASCII letters, digits and `_ / ! . * ' ( ) space & $ = @ ; :
/// + , ? -`), as storage's `limits.ts` does: non-ASCII keys are refused there too (`InvalidKey`). GuestPass also
/// refuses what Supabase lets through but no client means: an empty segment (`a//b`, a leading or trailing `/`), a
/// `.` or `..` segment, and keys over 1,024 bytes. The bytes never live under a key's text (the backend's keys are
/// server-made), so these rules keep names unambiguous rather than keep files in their directory.
public enum ObjectName {
    /// The longest key, in bytes (Supabase's `name` limit).
    public static let maxKeyBytes = 1024
    /// The longest bucket name, in characters.
    public static let maxBucketNameLength = 100

    /// Why a key or bucket name is refused.
    public enum Refusal: Error, Equatable, Sendable {
        case invalidKey(String)
        case invalidBucketName(String)
    }

    private static let allowed: Set<UInt8> = {
        var set = Set<UInt8>()
        for byte in UInt8(ascii: "a")...UInt8(ascii: "z") { set.insert(byte) }
        for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { set.insert(byte) }
        for byte in UInt8(ascii: "0")...UInt8(ascii: "9") { set.insert(byte) }
        for character in "_/!.*'() &$=@;:+,?-".utf8 { set.insert(character) }
        return set
    }()

    /// `key` when it is a valid object key, else `Refusal.invalidKey`.
    public static func key(_ key: String) throws(Refusal) -> String {
        let bytes = Array(key.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxKeyBytes, bytes.allSatisfy(Self.allowed.contains) else {
            throw .invalidKey(key)
        }
        for segment in key.split(separator: "/", omittingEmptySubsequences: false) {
            guard !segment.isEmpty, segment != ".", segment != ".." else { throw .invalidKey(key) }
        }
        return key
    }

    /// `name` when it is a valid bucket name (1 to 100 characters of the key set, no `/`), else
    /// `Refusal.invalidBucketName`.
    public static func bucket(_ name: String) throws(Refusal) -> String {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxBucketNameLength, !bytes.contains(UInt8(ascii: "/")),
            bytes.allSatisfy(Self.allowed.contains), name != ".", name != ".."
        else { throw .invalidBucketName(name) }
        return name
    }

    /// A folder prefix for `list`: empty, or segments ending in `/` (Supabase adds the missing slash). Leading and
    /// trailing slashes are trimmed first; the rest must be a valid key.
    public static func folder(_ prefix: String) throws(Refusal) -> String {
        var trimmed = Substring(prefix)
        while trimmed.first == "/" { trimmed = trimmed.dropFirst() }
        while trimmed.last == "/" { trimmed = trimmed.dropLast() }
        if trimmed.isEmpty { return "" }
        return try Self.key(String(trimmed)) + "/"
    }
}
