/// One byte range of a `Range: bytes=…` header (RFC 9110 §14), resolved against an object's size.
public enum ByteRange: Equatable, Sendable {
    /// No usable range: serve the whole object (no header, another unit, several ranges, or a malformed one, all of
    /// which RFC 9110 lets a server ignore).
    case whole
    /// Serve these inclusive offsets with 206.
    case partial(ClosedRange<Int64>)
    /// The range starts past the end: 416 with `Content-Range: bytes */<size>`.
    case unsatisfiable

    /// Resolves `header` (a `Range` value) against an object of `size` bytes.
    public static func resolve(_ header: String?, size: Int64) -> ByteRange {
        guard let header else { return .whole }
        let text = header.trimmingSpaces
        guard text.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = text.dropFirst("bytes=".count).trimmingSpaces
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingSpaces
        let last = spec[spec.index(after: dash)...].trimmingSpaces
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard let count = Int64(last), count >= 0, last.allSatisfy(\.isASCIIDigit) else { return .whole }
            if count == 0 || size == 0 { return .unsatisfiable }
            return .partial(max(0, size - count)...(size - 1))
        }
        guard first.allSatisfy(\.isASCIIDigit), let start = Int64(first) else { return .whole }
        var end = size - 1
        if !last.isEmpty {
            guard last.allSatisfy(\.isASCIIDigit), let requested = Int64(last) else { return .whole }
            guard requested >= start else { return .whole }
            end = min(requested, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .partial(start...end)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { self >= "0" && self <= "9" }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: Substring {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
