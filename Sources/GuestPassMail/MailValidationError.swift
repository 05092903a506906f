/// A value refused before any mail is built or sent: an address, a message field or an SMTP setting that could not be
/// written safely (a line break that would start a new header, a host that would change the URL, plain text to a
/// remote server).
///
/// The reason names the rule that was broken and never repeats a password; it may quote the refused value
/// (an address or a host), which the operator or the caller supplied.
public struct MailValidationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The field that was refused, e.g. `address`, `subject`, `host`.
    public let field: String
    /// Why, in plain words.
    public let reason: String

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { "MailValidationError(\(self.field)): \(self.reason)" }
}
