import Foundation
import FoundationXML
import NIOConcurrencyHelpers
import Testing

@testable import GuestPassApp

/// The operator console's parts without a server: the in-memory hour (`ServiceHistory`), the SVG charts, the form and
/// cookie readers, and the templates' escaping. The pages themselves run in a real Chromium: e2e/test_console_browser.py.
@Suite struct ConsoleTests {
    final class Clock: Sendable {
        let now = NIOLockedValueBox(Date(timeIntervalSince1970: 1_800_000_000))
        func advance(_ seconds: TimeInterval) { self.now.withLockedValue { $0 = $0.addingTimeInterval(seconds) } }
        var read: @Sendable () -> Date { { self.now.withLockedValue { $0 } } }
    }

    @Test func requestsLandInTheirTenSecondStepAndGroup() {
        let clock = Clock()
        let history = ServiceHistory(clock: clock.read)
        for _ in 0..<20 { history.record(path: "/rest/v1/rpc/get_quota", route: "/rest/v1/rpc/{name}", status: 200, nanoseconds: 900_000) }
        history.record(path: "/auth/v1/user", route: "/auth/v1/user", status: 401, nanoseconds: 100_000)
        clock.advance(10)
        history.record(path: "/rest/v1/readings", route: "/rest/v1/{table}", status: 503, nanoseconds: 5_000_000)
        let (steps, errors) = history.snapshot()
        #expect(steps.count == ServiceHistory.bucketCount)
        let previous = steps[steps.count - 2]
        let last = steps[steps.count - 1]
        #expect(previous.rate["rpc"] == 2.0)
        #expect(previous.clientErrorRate == 0.1)
        #expect(last.rate["rest"] == 0.1 && last.serverErrorRate == 0.1)
        #expect(last.rate["rpc"] == nil)
        #expect(errors.map(\.route) == ["/rest/v1/{table}"] && errors.first?.status == 503)
        // An hour later the old steps have rolled out of the ring.
        clock.advance(3600)
        #expect(history.snapshot().steps.allSatisfy { $0.rate.isEmpty })
    }

    @Test func theP99IsWithinAFactorOfTwo() {
        let clock = Clock()
        let history = ServiceHistory(clock: clock.read)
        for index in 0..<1000 {
            history.record(path: "/auth/v1/user", route: "/auth/v1/user", status: 200, nanoseconds: index < 985 ? 300_000 : 40_000_000)
        }
        let p99 = history.snapshot().steps.last?.p99Milliseconds["auth"] ?? 0
        #expect(p99 >= 40 && p99 <= 80, "p99 \(p99) ms")
    }

    @Test func concurrentRecordingAddsUpExactly() async {
        let clock = Clock()
        let history = ServiceHistory(clock: clock.read)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    for _ in 0..<200 { history.record(path: "/storage/v1/object/a", route: "/storage", status: 200, nanoseconds: 1000) }
                }
            }
        }
        #expect(history.snapshot().steps.last?.rate["storage"] == 10_000 / Double(ServiceHistory.bucketSeconds))
    }

    final class ElementCounter: NSObject, XMLParserDelegate {
        var elements: [String: Int] = [:]
        var text = ""
        func parser(
            _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]
        ) {
            self.elements[name, default: 0] += 1
        }
        func parser(_ parser: XMLParser, foundCharacters string: String) { self.text += string }
    }

    func parse(_ svg: String) -> ElementCounter? {
        let parser = XMLParser(data: Data(svg.utf8))
        let counter = ElementCounter()
        parser.delegate = counter
        return parser.parse() ? counter : nil
    }

    @Test func aChartIsWellFormedSVGWithOneLinePerSeries() throws {
        let svg = SVGChart.lines(
            title: "Requests <per> second & more", unit: "req/s",
            series: [.init(name: "auth", values: [0, 1, 2, 4]), .init(name: "<script>", values: [4, 3, 2, 1])])
        let parsed = try #require(self.parse(svg), "not well-formed XML: \(svg)")
        #expect(parsed.elements["polyline"] == 2)
        #expect(parsed.elements["title"] == 1)
        #expect(!svg.contains("<script>") && svg.contains("&lt;script&gt;"))
        #expect(svg.contains("role=\"img\"") && svg.contains("aria-label=\"Requests &lt;per&gt; second &amp; more: now auth 4 req/s"))
        // The first point sits on the left edge at 0 (the bottom), the last of "auth" on the right edge at the peak (the top).
        #expect(svg.contains("points=\"48,160 "))
        #expect(svg.contains(" 632,12\""))
    }

    @Test func aChartWithoutDataSaysSo() throws {
        let svg = SVGChart.lines(title: "Realtime sockets", unit: "sockets", series: [.init(name: "open", values: [0, 0, 0])])
        #expect(try #require(self.parse(svg)).text.contains("no data"))
    }

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
