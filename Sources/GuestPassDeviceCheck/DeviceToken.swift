/// Local checks on a device token before it is sent to Apple.
enum DeviceToken {
    /// The longest accepted token, in bytes (real tokens are a few kilobytes at most).
    static let maximumLength = 4096

    /// Whether `token` is plausible: non-empty, at most `maximumLength` bytes, standard base64 (`A–Z a–z 0–9 + /`)
    /// with at most two `=` of padding at the end, and no line breaks or spaces.
    static func isWellFormed(_ token: String) -> Bool {
        let bytes = Array(token.utf8)
        guard !bytes.isEmpty, bytes.count <= self.maximumLength else { return false }
        var padding = 0
        for byte in bytes {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0, self.isBase64(byte) else { return false }
        }
        return padding <= 2 && padding < bytes.count
    }

    private static func isBase64(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "+"), UInt8(ascii: "/"):
            true
        default: false
        }
    }
}
