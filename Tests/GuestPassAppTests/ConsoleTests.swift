import Foundation
import Testing

@testable import GuestPassApp

/// The operator console's parts without a server: the form and cookie readers, and the templates' escaping (the
/// in-memory hour: `ServiceHistoryTests`; the charts: `SVGChartTests`). The pages themselves run in a real Chromium:
/// e2e/test_console_browser.py.
@Suite struct ConsoleTests {
    @Test func formsDecodeAndRefuseWhatIsNotUTF8() {
        let form = ConsoleForm.parse("csrf=a%2Bb&reason=support+ticket+%2342&reason=second&empty=")
        #expect(form?["csrf"] == "a+b" && form?["reason"] == "support ticket #42" && form?["empty"] == "")
        #expect(ConsoleForm.parse("reason=%FF%FE") == nil)
        #expect(ConsoleForm.parse("") != nil)
    }

    @Test func theCSRFTokenIsTheSessionsAndNoOthers() throws {
        let token = try ConsoleCookies.newToken()
        let other = try ConsoleCookies.newToken()
        #expect(token != other && token.count == 43)
        #expect(ConsoleCookies.csrfToken(forSession: token) == ConsoleCookies.csrfToken(forSession: token))
        #expect(ConsoleCookies.csrfToken(forSession: token) != ConsoleCookies.csrfToken(forSession: other))
        #expect(ConsoleCookies.csrfToken(forSession: token) != token)
        let caller = ConsoleCaller(sessionHash: ConsoleCookies.hash(token), csrf: ConsoleCookies.csrfToken(forSession: token), email: "o@example.com")
        #expect(caller.accepts(ConsoleForm(fields: ["csrf": ConsoleCookies.csrfToken(forSession: token)])))
        #expect(!caller.accepts(ConsoleForm(fields: ["csrf": ConsoleCookies.csrfToken(forSession: other)])))
        #expect(!caller.accepts(ConsoleForm(fields: [:])))
        let cookie = ConsoleCookies(secure: true).setCookie(ConsoleCookies.session, token, seconds: 60)
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.hasSuffix("; Secure"))
    }

    @Test func everyTemplateParsesAndEscapesWhatUsersTyped() throws {
        let pages = try ConsolePages.bundled()
        for template in ["sign_in", "second_factor", "apps", "app", "search", "user", "audit", "health", "error"] {
            #expect(pages.render(template, [:]) != nil, "template \(template)")
        }
        #expect(pages.render("no_such_page", [:]) == nil)
        let hostile = "<script>alert(1)</script>\"'&"
        let view: [String: Any] = [
            "value": hostile, "searched": true, "kind_label": "Email", "has_users": true,
            "users": [["user_id": "u", "app_name": hostile, "email": hostile, "is_anonymous": false, "created_at": "t"]],
        ]
        let html = try #require(pages.render("search", view))
        #expect(!html.contains("<script>alert(1)</script>"))
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
    }
}
