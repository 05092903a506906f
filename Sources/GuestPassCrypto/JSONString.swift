/// Writing a string as JSON: `"` and `\` escaped, control characters as `\n`, `\r`, `\t`, `\b`, `\f` or `\u00XX`,
/// everything else (non-ASCII included) as its UTF-8. The one JSON string writer: `CompactJSONEncoder` writes bytes, the
/// Realtime frames (`RealtimeProtocol`) text.
public enum JSONString {
    /// Appends `text` as a JSON string to `bytes`.
    public static func append(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { utf8 in
            bytes.append(UInt8(ascii: "\""))
            // Most strings need no escape: copy them whole.
            guard Self.needsEscape(utf8) else {
                bytes.append(contentsOf: utf8)
                bytes.append(UInt8(ascii: "\""))
                return
            }
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
                case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
                case 0x00..<0x20:
                    let hex = Array("0123456789ABCDEF".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0x0F)])
                default: bytes.append(byte)
                }
            }
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// Appends `text` as a JSON string to `string`. Most strings need no escape and are appended whole.
    public static func append(_ text: String, to string: inout String) {
        guard Self.needsEscape(text.utf8) else {
            string.append("\"")
            string.append(text)
            string.append("\"")
            return
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 8)
        Self.append(text, to: &bytes)
        string.append(String(decoding: bytes, as: UTF8.self))
    }

    private static func needsEscape(_ utf8: some Sequence<UInt8>) -> Bool {
        utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
    }
}
