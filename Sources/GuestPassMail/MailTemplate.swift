/// An operator's template for one kind of mail: mustache text for the subject, the plain-text body and, optionally,
/// the HTML body.
///
/// The subject and the text body are rendered without escaping; the HTML body escapes every `{{ name }}` for HTML
/// (`&`, `<`, `>`, `"`, `'`), so an address or a URL cannot add markup; `{{{ name }}}` would not escape and should
/// not be used for anything a user typed. The variables are those of `MailTemplateVariables` (snake_case).
public struct MailTemplate: Sendable, Hashable, Codable {
    public var subject: String
    public var text: String
    public var html: String?

    public init(subject: String, text: String, html: String? = nil) {
        self.subject = subject
        self.text = text
        self.html = html
    }
}

/// The values a template can use, by their snake_case names:
///
/// | name | value |
/// | --- | --- |
/// | `token` | the one-time code |
/// | `token_hash` | the hash the link carries |
/// | `confirmation_url` | the link |
/// | `site_url` | the app's site |
/// | `redirect_to` | where the link leads after confirming |
/// | `email` | the user's address |
/// | `new_email` | the new address (`email_change`) |
/// | `token_length` | the number of digits of the code, so a template can say "enter the 6-digit code" |
///
/// An empty value counts as absent, so a section renders only when there is a value
/// (`{{#redirect_to}}…{{/redirect_to}}`, `{{^new_email}}…{{/new_email}}`). A name a template uses that is not in this
/// table renders empty; `MailTemplates.validate` refuses it.
public struct MailTemplateVariables: Sendable, Hashable {
    public var token: String
    public var tokenHash: String
    public var confirmationURL: String
    public var siteURL: String
    public var redirectTo: String
    public var email: String
    public var newEmail: String

    public init(
        token: String = "",
        tokenHash: String = "",
        confirmationURL: String = "",
        siteURL: String = "",
        redirectTo: String = "",
        email: String,
        newEmail: String = ""
    ) {
        self.token = token
        self.tokenHash = tokenHash
        self.confirmationURL = confirmationURL
        self.siteURL = siteURL
        self.redirectTo = redirectTo
        self.email = email
        self.newEmail = newEmail
    }

    /// The number of characters of the code.
    public var tokenLength: Int { self.token.count }

    /// The names a template may use.
    public static let names: Set<String> = [
        "token", "token_hash", "confirmation_url", "site_url", "redirect_to", "email", "new_email", "token_length",
    ]

    /// The non-empty values by template name, as mustache reads them.
    var byName: [String: String] {
        let all = [
            "token": self.token, "token_hash": self.tokenHash, "confirmation_url": self.confirmationURL,
            "site_url": self.siteURL, "redirect_to": self.redirectTo, "email": self.email, "new_email": self.newEmail,
            "token_length": self.token.isEmpty ? "" : String(self.tokenLength),
        ]
        return all.filter { !$0.value.isEmpty }
    }
}
