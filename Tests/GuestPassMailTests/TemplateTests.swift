import Foundation
import Testing

@testable import GuestPassMail

/// `MailTemplates`: the built-in templates hold the code and the link, HTML is escaped, custom templates render and
/// broken ones are refused with a place.
@Suite struct TemplateTests {
    static let variables = MailTemplateVariables(
        token: "123456",
        tokenHash: "pkce_0f3a9b",
        confirmationURL: "https://auth.example.com/auth/v1/verify?token=pkce_0f3a9b&type=signup&redirect_to=https://app.example.com",
        siteURL: "https://app.example.com",
        redirectTo: "https://app.example.com/welcome",
        email: "someone@example.com",
        newEmail: "new@example.com"
    )

    @Test func kindsUseGoTruesNames() {
        #expect(
            MailTemplateKind.allCases.map(\.rawValue) == ["confirmation", "magic_link", "recovery", "email_change", "reauthentication", "invite"])
        #expect(MailTemplateKind(rawValue: "magic_link") == .magicLink)
    }

    @Test(arguments: MailTemplateKind.allCases)
    func defaultsHoldTheCodeAndTheLink(_ kind: MailTemplateKind) throws {
        try MailTemplates.validate(MailTemplates.defaultTemplate(for: kind))
        let mail = try MailTemplates.render(kind: kind, template: nil, variables: Self.variables)
        #expect(!mail.subject.isEmpty)
        #expect(!mail.subject.contains("\n"))
        #expect(mail.text.contains("123456"))
        #expect(mail.text.contains("6-digit code"))
        #expect(!mail.text.contains("{{"))
        let html = try #require(mail.html)
        #expect(html.contains("123456"))
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        let escapedURL = Self.variables.confirmationURL.replacingOccurrences(of: "&", with: "&amp;")
        if kind == .reauthentication {
            #expect(!mail.text.contains("https://auth.example.com"))
            #expect(!html.contains("https://auth.example.com"))
        } else {
            #expect(mail.text.contains(Self.variables.confirmationURL))
            #expect(html.contains("href=\"\(escapedURL)\""))
        }
        // The text reads without a code or a link too (empty values are absent).
        let linkOnly = try MailTemplates.render(
            kind: kind, template: nil,
            variables: MailTemplateVariables(confirmationURL: "https://x.example/verify", email: "a@b.c")
        )
        #expect(!linkOnly.text.contains("digit code"))
        #expect(!linkOnly.text.contains("\n\n\n"))
    }

    @Test func theDefaultConfirmationText() throws {
        let mail = try MailTemplates.render(kind: .confirmation, template: nil, variables: Self.variables)
        #expect(mail.subject == "Confirm your email address")
        #expect(
            mail.text == """
                Hello,

                Thanks for signing up! Please confirm your email address.

                Your confirmation code is: 123456
                Enter this 6-digit code in the app.

                Or confirm by opening this link:

                \(Self.variables.confirmationURL)

                If you didn't sign up, you can safely ignore this email.

                """
        )
    }

    @Test func htmlIsEscaped() throws {
        var variables = Self.variables
        variables.email = "\"<script>alert(1)</script>\"@evil.example"
        variables.newEmail = "new@example.com<img src=x onerror=alert(1)>"
        let mail = try MailTemplates.render(kind: .emailChange, template: nil, variables: variables)
        let html = try #require(mail.html)
        #expect(!html.contains("<script>"))
        #expect(!html.contains("<img"))
        #expect(html.contains("&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;@evil.example"))
        #expect(html.contains("new@example.com&lt;img src=x onerror=alert(1)&gt;"))
        // The text body is not HTML: it shows the values as they are.
        #expect(mail.text.contains(variables.email))
    }

    @Test func aCustomTemplate() throws {
        let template = MailTemplate(
            subject: "Your {{token_length}}-digit code for {{site_url}}\r\nBcc: x@y.z",
            text: "Code: {{token}} & link: {{confirmation_url}}{{#redirect_to}} (then {{redirect_to}}){{/redirect_to}}",
            html: "<p>{{token}} for {{email}} & {{token_hash}}</p>"
        )
        try MailTemplates.validate(template)
        let mail = try MailTemplates.render(kind: .magicLink, template: template, variables: Self.variables)
        #expect(mail.subject == "Your 6-digit code for https://app.example.com  Bcc: x@y.z", "a subject is always one line")
        #expect(mail.text == "Code: 123456 & link: \(Self.variables.confirmationURL) (then https://app.example.com/welcome)")
        #expect(mail.html == "<p>123456 for someone@example.com & pkce_0f3a9b</p>")
        let withoutHTML = try MailTemplates.render(kind: .magicLink, template: MailTemplate(subject: "s", text: "t"), variables: Self.variables)
        #expect(withoutHTML.html == nil)
        // A rendered subject always makes a valid message.
        _ = try MailMessage(from: MailAddress("a@b.c"), to: MailAddress("d@e.f"), subject: mail.subject, text: mail.text)
    }

    @Test func templatesRoundTripThroughJSON() throws {
        let template = MailTemplate(subject: "s {{token}}", text: "t", html: "<b>h</b>")
        let data = try JSONEncoder().encode(template)
        #expect(try JSONDecoder().decode(MailTemplate.self, from: data) == template)
        #expect(try JSONDecoder().decode(MailTemplate.self, from: Data(#"{"subject":"s","text":"t"}"#.utf8)).html == nil)
    }

    @Test func invalidTemplatesAreRefusedWithAPlace() throws {
        let unclosed = MailTemplate(subject: "ok", text: "line one\nline two {{#token}} never closed")
        let error = try #require(throws: MailTemplateError.self) { try MailTemplates.validate(unclosed) }
        #expect(error.part == .text)
        guard case .syntax = error.problem else {
            Issue.record("expected a syntax error, got \(error)")
            return
        }
        #expect(error.line == 2)
        #expect(throws: MailTemplateError.self) {
            try MailTemplates.render(kind: .confirmation, template: unclosed, variables: Self.variables)
        }

        let badSubject = try #require(throws: MailTemplateError.self) {
            try MailTemplates.validate(MailTemplate(subject: "{{/token}}", text: "t"))
        }
        #expect(badSubject.part == .subject)
        #expect(badSubject.line == 1)
        let sameInHTML = try #require(throws: MailTemplateError.self) {
            try MailTemplates.validate(MailTemplate(subject: "s", text: "t", html: "{{/token}}"))
        }
        #expect(badSubject.column == sameInHTML.column, "the pragma in front of a text part does not shift the column")

        let badHTML = try #require(throws: MailTemplateError.self) {
            try MailTemplates.validate(MailTemplate(subject: "s", text: "t", html: "<p>{{token</p>"))
        }
        #expect(badHTML.part == .html)

        let typo = try #require(throws: MailTemplateError.self) {
            try MailTemplates.validate(MailTemplate(subject: "s", text: "open {{confirmation_link}}"))
        }
        #expect(typo.problem == .unknownVariable("confirmation_link"))
        #expect(typo.description.contains("confirmation_url"))

        let empty = try #require(throws: MailTemplateError.self) { try MailTemplates.validate(MailTemplate(subject: " ", text: "t")) }
        #expect(empty.problem == .empty)
        #expect(empty.part == .subject)
    }
}
