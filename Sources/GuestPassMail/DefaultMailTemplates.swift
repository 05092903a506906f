/// The built-in templates, one per kind: plain, friendly English, a text and an HTML body.
///
/// Unlike GoTrue's built-in mails (link only), each holds both the one-time code and the link, so an app may use
/// either flow without a custom template; `reauthentication` holds the code only, as in GoTrue. The code and the
/// link sit in sections (`{{#token}}…{{/token}}`, `{{#confirmation_url}}…{{/confirmation_url}}`), so a mail sent
/// without one of them reads well too.
enum DefaultMailTemplates {
    static func template(for kind: MailTemplateKind) -> MailTemplate {
        switch kind {
        case .confirmation:
            return standard(
                subject: "Confirm your email address",
                intro: "Thanks for signing up! Please confirm your email address.",
                codeLabel: "Your confirmation code is",
                link: ("Or confirm by opening this link", "Confirm my email address"),
                outro: "If you didn't sign up, you can safely ignore this email."
            )
        case .magicLink:
            return standard(
                subject: "Your sign-in link",
                intro: "Here is how to sign in to your account.",
                codeLabel: "Your sign-in code is",
                link: ("Or sign in by opening this link", "Sign in"),
                outro: "The code and the link work only once. If you didn't ask to sign in, you can safely ignore this email."
            )
        case .recovery:
            return standard(
                subject: "Reset your password",
                intro: "We received a request to reset the password of your account.",
                codeLabel: "Your password reset code is",
                link: ("Or reset it by opening this link", "Reset my password"),
                outro: "If you didn't ask to reset your password, you can safely ignore this email: your password stays the same."
            )
        case .emailChange:
            return standard(
                subject: "Confirm your new email address",
                intro: "Please confirm the change of your account's email address from {{email}} to {{new_email}}.",
                codeLabel: "Your confirmation code is",
                link: ("Or confirm the change by opening this link", "Confirm the change"),
                outro: "If you didn't ask for this change, please ignore this email and make sure your password is safe."
            )
        case .reauthentication:
            return standard(
                subject: "Confirm it's you",
                intro: "Please confirm it's you before making this change.",
                codeLabel: "Your confirmation code is",
                link: nil,
                outro: "If you didn't ask for this, you can safely ignore this email."
            )
        case .invite:
            return standard(
                subject: "You have been invited",
                intro: "You have been invited to create an account{{#site_url}} on {{site_url}}{{/site_url}}.",
                codeLabel: "Your invitation code is",
                link: ("Or accept the invitation by opening this link", "Accept the invitation"),
                outro: "If you weren't expecting this invitation, you can safely ignore this email."
            )
        }
    }

    /// One layout for every kind: a greeting, `intro`, the code (if any), the link (if `link` and a URL are given) and
    /// `outro`. `intro` and `outro` are mustache text, escaped for HTML by mustache where they use variables.
    private static func standard(
        subject: String,
        intro: String,
        codeLabel: String,
        link: (label: String, text: String)?,
        outro: String
    ) -> MailTemplate {
        var text = """
            Hello,

            \(intro)
            {{#token}}

            \(codeLabel): {{token}}
            Enter this {{token_length}}-digit code in the app.
            {{/token}}

            """
        var html = """
            <!DOCTYPE html>
            <html>
            <body style="font-family: -apple-system, Helvetica, Arial, sans-serif; line-height: 1.5; color: #1a1a1a;">
            <p>Hello,</p>
            <p>\(intro)</p>
            {{#token}}
            <p>\(codeLabel):</p>
            <p style="font-size: 28px; font-weight: bold; letter-spacing: 4px;">{{token}}</p>
            <p>Enter this {{token_length}}-digit code in the app.</p>
            {{/token}}

            """
        if let link {
            text += """
                {{#confirmation_url}}

                \(link.label):

                {{confirmation_url}}
                {{/confirmation_url}}

                """
            html += """
                {{#confirmation_url}}
                <p>\(link.label):</p>
                <p><a href="{{confirmation_url}}">\(link.text)</a></p>
                {{/confirmation_url}}

                """
        }
        text += "\n\(outro)\n"
        html += """
            <p style="color: #666666;">\(outro)</p>
            </body>
            </html>

            """
        return MailTemplate(subject: subject, text: text, html: html)
    }
}
