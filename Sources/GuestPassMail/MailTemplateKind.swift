/// The mails the auth service sends, named as GoTrue names its templates (`GOTRUE_MAILER_TEMPLATES_<KIND>`): the raw
/// values are GoTrue's snake_case names.
public enum MailTemplateKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// Confirm the address given at sign-up.
    case confirmation
    /// Sign in with a link or a one-time code.
    case magicLink = "magic_link"
    /// Reset a forgotten password.
    case recovery
    /// Confirm a change of address (sent to the new address, and to the old one when both must confirm).
    case emailChange = "email_change"
    /// Confirm it is the user before a sensitive change (a code only).
    case reauthentication
    /// Accept an invitation to create an account.
    case invite
}
