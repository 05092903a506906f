/// The query string's bytes to decoded pairs, as PostgREST's `parseQueryReplacePlus True` splits and decodes them (a
/// `%` not followed by two hexadecimal digits stays a `%`, as http-types' `urlDecode` keeps it, so
/// `like(any).{%plan%}` reads as in PostgREST), but strict about what PostgREST would pass on: invalid UTF-8 or a NUL
/// is refused.
public enum QueryString {
    static func pairs(_ rawQuery: String) throws(QueryGrammarError) -> [(key: String, value: String)] {
        var bytes = Array(rawQuery.utf8)[...]
        if bytes.first == UInt8(ascii: "?") { bytes = bytes.dropFirst() }
        var pairs: [(key: String, value: String)] = []
        for piece in bytes.split(omittingEmptySubsequences: true, whereSeparator: { $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: ";") }) {
            guard let equals = piece.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = try Self.decode(piece[..<equals])
            let value = try Self.decode(piece[(equals + 1)...])
            pairs.append((key, value))
        }
        return pairs
    }

    /// The pairs sorted by key (stably), each key once with its values joined by `,`, every byte but ASCII letters,
    /// digits and `-_.~` percent-encoded: Haskell's `urlEncodeVars` over PostgREST's sorted pairs.
    static func canonical(_ pairs: [(key: String, value: String)]) -> String {
        var keys: [String] = []
        var values: [String: [String]] = [:]
        for pair in pairs {
            if values[pair.key] == nil { keys.append(pair.key) }
            values[pair.key, default: []].append(pair.value)
        }
        // By code point, as Haskell compares strings.
        return keys.sorted { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }.map { key in
            Self.percentEncoded(key) + "=" + values[key, default: []].map { Self.percentEncoded($0) }.joined(separator: ",")
        }.joined(separator: "&")
    }

    /// `text`'s UTF-8 bytes, each but an unreserved one (`A-Z a-z 0-9 - _ . ~`) as `%XX`; with `spaceAsPlus` a space
    /// as `+` (http-types' `urlEncode True`, which PostgREST's `Location` uses).
    public static func percentEncoded(_ text: String, spaceAsPlus: Bool = false) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " ") where spaceAsPlus:
                encoded += "+"
            default:
                encoded += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return encoded
    }

    /// `+` is a space, `%XX` a byte, any other `%` itself; the result must be UTF-8 without NUL.
    private static func decode(_ encoded: ArraySlice<UInt8>) throws(QueryGrammarError) -> String {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(encoded.count)
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let byte = encoded[index]
            switch byte {
            case UInt8(ascii: "+"):
                decoded.append(UInt8(ascii: " "))
                index += 1
            case UInt8(ascii: "%"):
                guard index + 2 < encoded.endIndex, let high = Self.hexValue(encoded[index + 1]), let low = Self.hexValue(encoded[index + 2]) else {
                    decoded.append(byte)
                    index += 1
                    continue
                }
                decoded.append(high << 4 | low)
                index += 3
            default:
                decoded.append(byte)
                index += 1
            }
        }
        guard !decoded.contains(0) else { throw Self.failure("a NUL character is not allowed") }
        guard let text = String(validating: decoded, as: UTF8.self) else { throw Self.failure("the decoded text is not valid UTF-8") }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func failure(_ details: String) -> QueryGrammarError {
        QueryGrammarError(message: "failed to parse the query string", details: details)
    }
}
