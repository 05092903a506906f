/// The few values GuestPass reads from S3's XML answers, found by substring (`<Tag>value</Tag>`): `UploadId`,
/// `ETag`, `Code`, `Message`, `Key`. No XML parser: S3 writes these elements without attributes or CDATA, and the only
/// escapes a value can hold are the five predefined entities, which are undone.
enum S3XML {
    /// The text of every `<tag>…</tag>` element of `document`, in order, unescaped.
    static func values(of tag: String, in document: String) -> [String] {
        let bytes = Array(document.utf8)
        let open = Array("<\(tag)>".utf8)
        let close = Array("</\(tag)>".utf8)
        var results: [String] = []
        var index = 0
        while let start = Self.find(open, in: bytes, from: index) {
            let valueStart = start + open.count
            guard let end = Self.find(close, in: bytes, from: valueStart) else { break }
            results.append(Self.unescape(String(decoding: bytes[valueStart..<end], as: UTF8.self)))
            index = end + close.count
        }
        return results
    }

    /// The text of the first `<tag>…</tag>` element, unescaped.
    static func value(of tag: String, in document: String) -> String? {
        Self.values(of: tag, in: document).first
    }

    /// Whether the document is an S3 `<Error>` answer (which CompleteMultipartUpload and CopyObject may send with 200).
    static func isError(_ document: String) -> Bool {
        Self.find(Array("<Error>".utf8), in: Array(document.utf8), from: 0) != nil
    }

    /// `text` with `&`, `<`, `>`, `"` and `'` written as entities.
    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }

    private static func unescape(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "&")) else { return text }
        return
            text
            .replacing("&quot;", with: "\"").replacing("&apos;", with: "'").replacing("&lt;", with: "<")
            .replacing("&gt;", with: ">").replacing("&#34;", with: "\"").replacing("&amp;", with: "&")
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0] && haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
