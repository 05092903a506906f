import Foundation
import GuestPassCrypto

/// A DeviceCheck token as the app sent it, checked and put in canonical form before anything else happens.
///
/// Apple's tokens are standard base64. One token can be spelled several ways (with or without `=` padding, with
/// different unused low bits in its last character), so replay detection must not key on the text: `hashHex` is the
/// SHA-256 of the decoded bytes, and `canonical` (the bytes re-encoded, padded) is what is sent to Apple.
public struct DeviceToken: Sendable, Hashable {
    /// The longest accepted token, in bytes (real tokens are a few kilobytes at most).
    static let maximumLength = 4096

    /// Standard padded base64 of the token's bytes.
    public let canonical: String
    /// Lowercase hex SHA-256 of the token's bytes: the identity used for replay detection.
    public let hashHex: String

    /// Checks `text`: 1–4096 bytes of standard base64 (`A–Z a–z 0–9 + /`, optional `=` padding, no spaces or line
    /// breaks) that decodes to at least one byte. Nil otherwise: such a token is refused without calling Apple.
    public init?(_ text: String) {
        guard Self.isWellFormed(text) else { return nil }
        let unpadded = text.utf8.count - text.utf8.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard unpadded % 4 != 1 else { return nil }
        let padded = String(text.prefix(unpadded)) + String(repeating: "=", count: (4 - unpadded % 4) % 4)
        guard let bytes = Data(base64Encoded: padded), !bytes.isEmpty else { return nil }
        self.canonical = bytes.base64EncodedString()
        self.hashHex = Digest.sha256Hex(bytes)
    }

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
