/// A validated mailbox: the bare address `local@domain` and an optional display name.
///
/// **Design.** Validation is strict so that an address can be written into a header, an SMTP command
/// (`MAIL FROM:<…>`, `RCPT TO:<…>`) and a libcurl option without any quoting or escaping: printable ASCII only, at
/// most 254 bytes (RFC 5321's path limit), exactly one `@`, a local part of at most 64 bytes without leading,
/// trailing or doubled dots, a domain of dot-separated labels of letters, digits and hyphens (1–63 bytes each), and
/// none of the characters that would end or restructure a header or a command: CR, LF, NUL or any other control
/// character, space, `<`, `>`, `(`, `)`, `[`, `]`, `\`, `,`, `;`, `:`, `"`.
///
/// **Limits.** Quoted local parts (`"john doe"@example.com`), address literals (`user@[192.0.2.1]`) and
/// internationalized addresses (RFC 6531 SMTPUTF8) are refused; an internationalized domain must be given in its
/// ASCII (punycode, `xn--…`) form. The display name may be any Unicode text without control characters or line
/// separators, at most 200 characters; it is encoded on output (RFC 2047) when it is not plain ASCII.
public struct MailAddress: Hashable, Sendable, CustomStringConvertible {
    /// The bare address, `local@domain`.
    public let address: String
    /// The display name shown by mail clients, if any (never empty).
    public let displayName: String?

    /// Validates `address` (and `displayName`, when given); an empty display name counts as none.
    public init(_ address: String, displayName: String? = nil) throws(MailValidationError) {
        try Self.validate(address: address)
        if let displayName, !displayName.isEmpty {
            try Self.validate(displayName: displayName)
            self.displayName = displayName
        } else {
            self.displayName = nil
        }
        self.address = address
    }

    /// The part after the `@`.
    public var domain: Substring { self.address[self.address.index(after: self.address.lastIndex(of: "@")!)...] }

    /// `Name <local@domain>`, or the bare address: for logs and error messages, not for headers (no encoding).
    public var description: String {
        guard let displayName else { return self.address }
        return "\(displayName) <\(self.address)>"
    }

    // MARK: Validation

    private static let forbiddenASCII: Set<UInt8> = Set("<>()[]\\,;:\"".utf8)

    static func validate(address: String) throws(MailValidationError) {
        let bytes = Array(address.utf8)
        func refuse(_ reason: String) -> MailValidationError { MailValidationError(field: "address", reason: reason) }
        guard !bytes.isEmpty else { throw refuse("the address is empty") }
        guard bytes.count <= 254 else { throw refuse("the address is longer than 254 bytes") }
        for byte in bytes {
            guard byte > 0x20, byte < 0x7F else {
                throw refuse("the address holds a space, a control character (CR, LF, NUL…) or non-ASCII text")
            }
            guard !Self.forbiddenASCII.contains(byte) else {
                throw refuse("the address holds one of < > ( ) [ ] \\ , ; : \"")
            }
        }
        let parts = bytes.split(separator: UInt8(ascii: "@"), omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw refuse("the address must hold exactly one @") }
        let local = parts[0]
        let domain = parts[1]
        guard !local.isEmpty, local.count <= 64 else { throw refuse("the local part must be 1 to 64 bytes") }
        let localLabels = local.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard localLabels.allSatisfy({ !$0.isEmpty }) else {
            throw refuse("the local part may not start or end with a dot or hold two dots in a row")
        }
        guard !domain.isEmpty, domain.count <= 253 else { throw refuse("the domain must be 1 to 253 bytes") }
        for label in domain.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard !label.isEmpty, label.count <= 63 else { throw refuse("each label of the domain must be 1 to 63 bytes") }
            guard label.allSatisfy(Self.isLabelByte), label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else {
                throw refuse("the domain may hold only letters, digits, hyphens (not at a label's ends) and dots")
            }
        }
    }

    static func validate(displayName: String) throws(MailValidationError) {
        guard displayName.count <= 200 else {
            throw MailValidationError(field: "display name", reason: "the display name is longer than 200 characters")
        }
        guard !displayName.unicodeScalars.contains(where: isControlOrLineBreak) else {
            throw MailValidationError(field: "display name", reason: "the display name holds a control character or a line break")
        }
    }

    private static func isLabelByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}

/// C0 and C1 control characters, DEL, and the Unicode line and paragraph separators: nothing a header may hold.
func isControlOrLineBreak(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029: return true
    default: return false
    }
}
