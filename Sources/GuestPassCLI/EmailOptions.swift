import ArgumentParser
import Foundation
import GuestPassApp
import GuestPassMail
import GuestPassStore

/// The email and SMTP options of `guestpass apps configure`.
struct EmailOptions: ParsableArguments {
    @Option(help: "Email: offer email sign-up, sign-in and upgrade (true, default) or not.") var emailEnabled: Bool?
    @Option(help: "Email: take addresses as confirmed without a mail (default false).") var emailAutoconfirm: Bool?
    @Option(help: "Email: digits per one-time code (6 to 10, default 6).") var emailOtpLength: Int?
    @Option(help: "Email: seconds a code or link works (60 to 86400, default 3600).") var emailOtpLifetime: Int?
    @Option(help: "Email: seconds between two mails to one address (0 to 3600, default 60).") var emailSendInterval: Int?
    @Option(help: "Email: mails the app may queue per hour (0 = none, default 100).") var emailHourlyLimit: Int?
    @Option(help: "Email: a confirmed address must also confirm a change away from it (default false).") var emailSecureChange: Bool?
    @Option(help: "Email: a password change from a session over 24 hours old needs a reauthentication nonce (default false).")
    var emailReauthenticatePassword: Bool?
    @Option(help: "Email: a first Sign in with Apple whose email is a confirmed address signs in to that account (default false).")
    var emailLinkApple: Bool?
    @Option(help: "Passwords: the fewest characters (6 to 72, default 8).") var passwordMinLength: Int?
    @Option(help: "Passwords: character sets each password must draw one character from, colon-separated (\"\" for none).")
    var passwordRequiredCharacters: String?
    @Option(help: "Email: where links lead by default (an http or https URL).") var siteUrl: String?
    @Option(help: "Email: the redirect_to URLs allowed, comma-separated; a trailing * allows a prefix (\"\" for none).")
    var redirectUrls: String?
    @Option(help: "SMTP: the relay's host.") var smtpHost: String?
    @Option(help: "SMTP: the relay's port (default 587 with starttls, 465 with tls).") var smtpPort: Int?
    @Option(help: "SMTP: the user name for AUTH.") var smtpUser: String?
    @Option(
        help:
            "SMTP: the password for AUTH, sealed before it is stored; needs the server's environment (GUESTPASS_JWT_SIGNING_KEY_FILE, GUESTPASS_REFRESH_TOKEN_SECRET)."
    )
    var smtpPassword: String?
    @Option(help: "SMTP: starttls (required; default), tls (implicit, port 465) or plain (loopback hosts only).") var smtpSecurity: String?
    @Option(help: "SMTP: the sender address (From).") var smtpSender: String?
    @Option(help: "SMTP: the sender's display name.") var smtpSenderName: String?
    @Option(help: "SMTP: a CA file (PEM) the server trusts for a private relay.") var smtpCaFile: String?
    @Option(
        help:
            "Email: a JSON file of templates by kind (confirmation, magic_link, recovery, email_change, reauthentication), each {subject, text, html?} in Mustache."
    )
    var emailTemplates: String?

    func validate() throws {
        if let security = self.smtpSecurity, !["starttls", "tls", "plain"].contains(security) {
            throw ValidationError("--smtp-security must be starttls, tls or plain")
        }
        if let host = self.smtpHost, self.smtpSecurity == "plain" {
            guard (try? SMTPSettings(host: host, security: .plain)) != nil else {
                throw ValidationError("--smtp-security plain is refused for a host that is not loopback")
            }
        }
    }

    /// Puts the options given into `settings`; seals the SMTP password for `app`; checks the templates.
    func apply(to settings: inout Administration.AppSettings, app: UUID) throws {
        settings.emailEnabled = self.emailEnabled
        settings.emailAutoconfirm = self.emailAutoconfirm
        settings.emailOTPLength = self.emailOtpLength
        settings.emailOTPLifetime = self.emailOtpLifetime
        settings.emailSendInterval = self.emailSendInterval
        settings.emailHourlyLimit = self.emailHourlyLimit
        settings.emailSecureChange = self.emailSecureChange
        settings.emailReauthenticatePassword = self.emailReauthenticatePassword
        settings.emailLinkApple = self.emailLinkApple
        settings.passwordMinLength = self.passwordMinLength
        settings.passwordRequiredCharacters = self.passwordRequiredCharacters.map { $0.split(separator: ":").map(String.init) }
        settings.siteURL = self.siteUrl
        settings.redirectURLs = self.redirectUrls.map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        settings.smtpHost = self.smtpHost
        settings.smtpPort = self.smtpPort
        settings.smtpUser = self.smtpUser
        settings.smtpSecurity = self.smtpSecurity
        settings.smtpSender = self.smtpSender
        settings.smtpSenderName = self.smtpSenderName
        settings.smtpCAFile = self.smtpCaFile
        if let password = self.smtpPassword {
            let auth = try AuthConfiguration(environment: ProcessInfo.processInfo.environment)
            settings.smtpPassword = try SMTPPasswordSealer(refreshTokenKey: auth.refreshTokenKey).seal(password, app: app)
        }
        if let path = self.emailTemplates {
            settings.emailTemplates = try Self.templates(at: path)
        }
    }

    /// The templates file at `path`, checked (known kinds, `{subject, text, html?}`, Mustache that parses and names
    /// only known variables), as the JSON text to store.
    static func templates(at path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
        let templates: [String: MailTemplate]
        do {
            templates = try JSONDecoder().decode([String: MailTemplate].self, from: data)
        } catch {
            throw ValidationError("\(path) must be a JSON object of {subject, text, html?} by kind")
        }
        for (kind, template) in templates {
            guard MailTemplateKind(rawValue: kind) != nil else {
                throw ValidationError("unknown template kind \(kind): \(MailTemplateKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            do {
                try MailTemplates.validate(template)
            } catch {
                throw ValidationError("template \(kind): \(error)")
            }
        }
        return String(decoding: try JSONEncoder().encode(templates), as: UTF8.self)
    }
}
