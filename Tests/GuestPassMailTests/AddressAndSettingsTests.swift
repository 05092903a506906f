import Foundation
import Testing

@testable import GuestPassMail

/// `MailAddress` validation and `SMTPSettings` rules (TLS unless loopback, a host that cannot change the URL, no
/// password in any description).
@Suite struct AddressAndSettingsTests {
    @Test func validAddresses() throws {
        for address in ["a@b.c", "first.last+tag@example.co.uk", "x_y-z@sub-domain.example", "o'brien@example.com", "1@2.3"] {
            #expect(try MailAddress(address).address == address)
        }
        #expect(try MailAddress("user@Example.COM").domain == "Example.COM")
        #expect(try MailAddress("a@b.c", displayName: "").displayName == nil)
        #expect(try MailAddress(String(repeating: "a", count: 64) + "@" + String(repeating: "b", count: 63) + ".c").address.count == 130)
    }

    @Test(arguments: [
        "", "plain", "a@", "@b.c", "a@@b.c", "a@b@c.d", "a b@c.d", "a@b c.d", "a\r\n@b.c", "a@b.c\r\nRCPT TO:<x@y.z>",
        "a@b.c>", "<a@b.c>", "a\u{0}@b.c", "\"quoted\"@b.c", "a@[127.0.0.1]", "a,b@c.d", "a;b@c.d", "a:b@c.d", ".a@b.c",
        "a.@b.c", "a..b@c.d", "a@-b.c", "a@b-.c", "a@b..c", "a@b.c.", "a@b_c.d", "josé@example.com", "a@exämple.com",
        String(repeating: "a", count: 65) + "@b.c", "a@" + String(repeating: "b", count: 64) + ".c",
        String(repeating: "a", count: 64) + "@" + Array(repeating: String(repeating: "b", count: 60), count: 4).joined(separator: "."),
    ])
    func invalidAddresses(_ address: String) {
        #expect(throws: MailValidationError.self) { try MailAddress(address) }
    }

    @Test func startTLSIsTheDefaultAndPortsFollowSecurity() throws {
        let settings = try SMTPSettings(host: "smtp.example.com", username: "apikey", password: "s3cret-p4ss")
        #expect(settings.security == .startTLS)
        #expect(settings.port == 587)
        #expect(settings.url == "smtp://smtp.example.com:587")
        #expect(try SMTPSettings(host: "smtp.example.com", security: .implicitTLS).url == "smtps://smtp.example.com:465")
        #expect(try SMTPSettings(host: "::1", port: 2525, security: .plain).url == "smtp://[::1]:2525")
        #expect(try SMTPSettings(host: "[2001:db8::1]").url == "smtp://[2001:db8::1]:587")
    }

    @Test func plainIsOnlyAllowedToALoopbackHost() throws {
        for host in ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "LOCALHOST"] {
            #expect(try SMTPSettings(host: host, security: .plain).isLoopback, "\(host)")
        }
        for host in ["smtp.example.com", "10.0.0.1", "128.0.0.1", "localhost.example.com", "127.0.0.1.nip.io", "::2", "0.0.0.0"] {
            #expect(throws: MailValidationError.self, "\(host)") { try SMTPSettings(host: host, security: .plain) }
            #expect(try SMTPSettings(host: host).security == .startTLS)
        }
    }

    @Test func hostsThatWouldChangeTheURLAreRefused() {
        for host in ["", "evil.com/path", "user@evil.com", "evil.com?x", "evil.com#x", "a b", "a\r\nb", "[::1", "::g", "evil.com:25"] {
            #expect(throws: MailValidationError.self, "\(host.debugDescription)") { try SMTPSettings(host: host) }
        }
        #expect(throws: MailValidationError.self) { try SMTPSettings(host: "a.b", port: 0) }
        #expect(throws: MailValidationError.self) { try SMTPSettings(host: "a.b", port: 65_536) }
        #expect(throws: MailValidationError.self) { try SMTPSettings(host: "a.b", password: "x\ny") }
        #expect(throws: MailValidationError.self) { try SMTPSettings(host: "a.b", timeout: .zero) }
    }

    @Test func noDescriptionShowsThePassword() throws {
        let password = "hunter2-very-secret"
        let settings = try SMTPSettings(host: "smtp.example.com", username: "apikey", password: password, caFile: "/etc/ca.pem")
        var dumped = ""
        dump(settings, to: &dumped)
        for text in ["\(settings)", String(reflecting: settings), dumped, "\([settings])"] {
            #expect(!text.contains(password), "\(text)")
            #expect(text.contains("smtp.example.com"))
        }
        #expect("\(settings)".contains("<redacted>"))
    }

    /// libcurl's codes by number (ABI-stable): 67 login denied, 55 send error, 56 receive error, 60 peer verification,
    /// 64 STARTTLS required but failed, 7 could not connect, 28 timed out.
    @Test func curlErrorsAreClassifiedAndRedacted() {
        let auth = SMTPError.fromCurl(67, replyCode: 535, detail: "Authentication failed: 535 p4ss", password: "p4ss")
        #expect(auth.kind == .authentication)
        #expect(auth.isPermanent)
        #expect(!auth.description.contains("p4ss"))
        let rcpt = SMTPError.fromCurl(55, replyCode: 550, detail: "RCPT failed: 550", password: nil)
        #expect(rcpt.kind == .rejected(code: 550))
        #expect(rcpt.isPermanent)
        let greylisted = SMTPError.fromCurl(55, replyCode: 450, detail: "RCPT failed: 450", password: nil)
        #expect(greylisted.kind == .rejected(code: 450))
        #expect(!greylisted.isPermanent)
        let dropped = SMTPError.fromCurl(56, replyCode: 250, detail: "", password: nil)
        #expect(dropped.kind == .other)
        #expect(!dropped.isPermanent)
        #expect(SMTPError.fromCurl(60, replyCode: 0, detail: "", password: nil).kind == .tls)
        #expect(SMTPError.fromCurl(64, replyCode: 0, detail: "", password: nil).kind == .tls)
        #expect(SMTPError.fromCurl(7, replyCode: 0, detail: "", password: nil).kind == .connect)
        #expect(SMTPError.fromCurl(28, replyCode: 0, detail: "", password: nil).kind == .timeout)
    }
}
