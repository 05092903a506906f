public import Foundation

/// One mail to one recipient: the envelope addresses, the subject, a plain-text body and an optional HTML body.
///
/// **Design.** Every field is checked when the message is made, so that `rendered()` cannot fail and no field can
/// inject a header: the addresses are `MailAddress`es, the subject may not hold a control character or a line break,
/// and the message id is a plain `left@right` token. The bodies may hold any text: they are always written
/// quoted-printable (see `rendered()`), so a body line can neither be read as a header nor as a MIME boundary.
///
/// The MIME boundary is drawn at random when the message is made, so one message renders to the same bytes every
/// time (a retry sends exactly what the first attempt sent).
///
/// **Limits.** One recipient per message; no attachments, no `Cc`/`Bcc`/`Reply-To`; the subject is at most 900
/// characters.
public struct MailMessage: Hashable, Sendable {
    /// The sender: the `From` header and the SMTP envelope sender (`MAIL FROM`).
    public let from: MailAddress
    /// The one recipient: the `To` header and the SMTP envelope recipient (`RCPT TO`).
    public let to: MailAddress
    public let subject: String
    /// The plain-text body (line ends may be LF, CR or CRLF; they are written as CRLF).
    public let text: String
    /// The HTML body; when present the message is `multipart/alternative` (text first, then HTML).
    public let html: String?
    /// The `Message-ID` without its angle brackets, `left@right`.
    public let messageID: String
    /// The `Date` header (written in UTC).
    public let date: Date
    /// The multipart boundary: `=_` cannot occur in quoted-printable text, so no body can contain it.
    let boundary: String

    /// Checks the fields; `messageID` (with or without angle brackets) defaults to a random id at the sender's
    /// domain.
    public init(
        from: MailAddress,
        to: MailAddress,
        subject: String,
        text: String,
        html: String? = nil,
        messageID: String? = nil,
        date: Date = Date()
    ) throws(MailValidationError) {
        guard subject.count <= 900 else {
            throw MailValidationError(field: "subject", reason: "the subject is longer than 900 characters")
        }
        guard !subject.unicodeScalars.contains(where: isControlOrLineBreak) else {
            throw MailValidationError(field: "subject", reason: "the subject holds a control character or a line break")
        }
        if let messageID {
            var id = Substring(messageID)
            if id.hasPrefix("<") && id.hasSuffix(">") && id.count >= 2 { id = id.dropFirst().dropLast() }
            try Self.validate(messageID: id)
            self.messageID = String(id)
        } else {
            self.messageID = "\(randomHex(bytes: 16))@\(from.domain)"
        }
        self.from = from
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
        self.date = date
        self.boundary = "=_GuestPass_\(randomHex(bytes: 12))"
    }

    private static let forbiddenInMessageID: Set<UInt8> = Set("<>()[]\\,;:\"".utf8)

    private static func validate(messageID: Substring) throws(MailValidationError) {
        let bytes = Array(messageID.utf8)
        guard (3...250).contains(bytes.count),
            bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !Self.forbiddenInMessageID.contains($0) }),
            bytes.filter({ $0 == UInt8(ascii: "@") }).count == 1,
            bytes.first != UInt8(ascii: "@"), bytes.last != UInt8(ascii: "@")
        else {
            throw MailValidationError(
                field: "message id",
                reason: "the message id must be left@right, 3 to 250 printable ASCII characters without spaces or < > ( ) [ ] \\ , ; : \""
            )
        }
    }
}

/// `bytes` random bytes as lowercase hex.
func randomHex(bytes: Int) -> String {
    var generator = SystemRandomNumberGenerator()
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(bytes * 2)
    for _ in 0..<bytes {
        let byte = UInt8.random(in: .min ... .max, using: &generator)
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: text, as: UTF8.self)
}
