import Foundation
import GuestPassTestSupport
import Logging
import Testing

@testable import GuestPassMail

/// `SMTPClient` end to end against `scripts/mail-catcher` (STARTTLS required, AUTH required, a throwaway CA).
@Suite struct SMTPClientTests {
    static func client(threads: Int = 2) -> SMTPClient {
        var logger = Logger(label: "smtp-test")
        logger.logLevel = .critical
        return SMTPClient(threads: threads, logger: logger)
    }

    static func message(to recipient: String = "someone@example.com", subject: String, text: String, html: String? = nil) throws
        -> MailMessage
    {
        try MailMessage(
            from: MailAddress("no-reply@guestpass.test", displayName: "GuestPass"),
            to: MailAddress(recipient),
            subject: subject,
            text: text,
            html: html
        )
    }

    /// Runs `body` with a client, shut down afterwards.
    static func withClient<T>(threads: Int = 2, _ body: (SMTPClient) async throws -> T) async throws -> T {
        let client = Self.client(threads: threads)
        do {
            let result = try await body(client)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }

    /// The error `body` throws, or nil.
    static func smtpError(_ body: () async throws(SMTPError) -> Void) async -> SMTPError? {
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    @Test func deliversOverStartTLSWithAuthIntact() async throws {
        try await MailCatcher.with { catcher in
            // Lines that start with a dot, and a lone dot: libcurl must dot-stuff them or the server would cut the
            // message short (and a lone "." line would end DATA early).
            let text = "Your code is: 123456\n.\n..two dots\n.leading dot\nUnicode: héllo wörld ✓\n"
            let message = try Self.message(subject: "Bienvenue à GuestPass ✓", text: text, html: "<p>Code <b>123456</b></p>\n.\n")
            try await Self.withClient { client in
                try await client.send(message, via: try catcher.settings())
                #expect(client.idleHandleCount == 1)
            }
            let entries = try await catcher.waitForEntries(1)
            let entry = try #require(entries.first)
            #expect(entry.tls)
            #expect(entry.auth_user == MailCatcher.username)
            #expect(entry.mail_from == "no-reply@guestpass.test")
            #expect(entry.rcpt_tos == ["someone@example.com"])
            #expect(entry.subject == "Bienvenue à GuestPass ✓")
            #expect(try catcher.message(entry.seq) == message.rendered())
            #expect(catcher.log().contains("mail to someone@example.com: Bienvenue à GuestPass ✓"))
            #expect(catcher.log().contains("  code: 123456"))
        }
    }

    @Test func theCAFileIsHonoured() async throws {
        try await MailCatcher.with { catcher in
            let message = try Self.message(subject: "untrusted", text: "x")
            let settings = try catcher.settings(trustCertificate: false)
            let error = try await Self.withClient { client in
                await Self.smtpError { () throws(SMTPError) in try await client.send(message, via: settings) }
            }
            let refused = try #require(error)
            #expect(refused.kind == .tls, "\(refused)")
            #expect(!refused.isPermanent)
            #expect(try catcher.entries().isEmpty)
        }
    }

    @Test func aWrongPasswordIsAPermanentAuthenticationFailure() async throws {
        try await MailCatcher.with { catcher in
            let message = try Self.message(subject: "wrong password", text: "x")
            let password = "not-the-password-42"
            let settings = try catcher.settings(password: password)
            let error = try await Self.withClient { client in
                await Self.smtpError { () throws(SMTPError) in try await client.send(message, via: settings) }
            }
            let refused = try #require(error)
            #expect(refused.kind == .authentication, "\(refused)")
            #expect(refused.isPermanent)
            #expect(refused.replyCode == 535)
            #expect(!refused.description.contains(password))
            #expect(!refused.description.contains("wrong password"))
            #expect(try catcher.entries().isEmpty)
        }
    }

    @Test func aTransientRejectionThenSuccessOnRetry() async throws {
        try await MailCatcher.with(["--require-tls", "--auth", "user:pass", "--fail-next", "1"]) { catcher in
            let message = try Self.message(subject: "retry me", text: "Your code is: 654321")
            let settings = try catcher.settings()
            try await Self.withClient { client in
                let error = await Self.smtpError { () throws(SMTPError) in try await client.send(message, via: settings) }
                let refused = try #require(error)
                #expect(refused.kind == .rejected(code: 451), "\(refused)")
                #expect(!refused.isPermanent)
                #expect(client.idleHandleCount == 0, "a failed handle is discarded")
                try await client.send(message, via: settings)
            }
            let entries = try await catcher.waitForEntries(1)
            #expect(entries.map(\.subject) == ["retry me"])
            #expect(try catcher.message(1) == message.rendered())
        }
    }

    @Test func startTLSIsRequired() async throws {
        try await MailCatcher.with(tls: false, []) { catcher in
            let message = try Self.message(subject: "no tls", text: "x")
            let settings = try catcher.settings(password: "", trustCertificate: false)
            let error = try await Self.withClient { client in
                await Self.smtpError { () throws(SMTPError) in try await client.send(message, via: settings) }
            }
            #expect(error?.kind == .tls, "\(String(describing: error))")
            // Plain SMTP is allowed to a loopback host, and works.
            try await Self.withClient { client in
                try await client.send(message, via: try catcher.settings(trustCertificate: false, security: .plain))
            }
            #expect(try await catcher.waitForEntries(1).first?.tls == false)
        }
    }

    @Test func nothingListeningIsAConnectError() async throws {
        let socket = try LoopbackSocket(listening: false)
        defer { socket.stop() }
        let settings = try SMTPSettings(host: "127.0.0.1", port: socket.port, timeout: .seconds(5))
        let message = try Self.message(subject: "nobody", text: "x")
        let error = try await Self.withClient { client in
            await Self.smtpError { () throws(SMTPError) in try await client.send(message, via: settings) }
        }
        #expect(error?.kind == .connect, "\(String(describing: error))")
        #expect(error?.isPermanent == false)
    }

    /// A relay that accepts and stays silent ends the send with `.timeout` (libcurl's limit, not a hang). No wall-clock
    /// bound beyond the trait's: on a loaded machine the continuation may be scheduled late.
    @Test(.timeLimit(.minutes(1))) func aSilentServerTimesOut() async throws {
        let socket = try LoopbackSocket(listening: true)
        defer { socket.stop() }
        let settings = try SMTPSettings(host: "127.0.0.1", port: socket.port, timeout: .milliseconds(500))
        let message = try Self.message(subject: "silence", text: "x")
        let error = try await Self.withClient { client in
            await Self.smtpError { () throws(SMTPError) in try await client.send(message, via: settings) }
        }
        #expect(error?.kind == .timeout, "\(String(describing: error))")
    }

    @Test func fiftyConcurrentMessagesArriveExactlyOnceOverReusedConnections() async throws {
        try await MailCatcher.with { catcher in
            let settings = try catcher.settings()
            let threads = 2
            try await Self.withClient(threads: threads) { client in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            let message = try Self.message(to: "user\(index)@example.com", subject: "message \(index)", text: "n=\(index)")
                            try await client.send(message, via: settings)
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(client.idleHandleCount <= threads)
            }
            let entries = try await catcher.waitForEntries(50)
            #expect(entries.count == 50)
            #expect(Set(entries.map(\.subject)) == Set((0..<50).map { "message \($0)" }))
            #expect(Set(entries.flatMap(\.rcpt_tos)) == Set((0..<50).map { "user\($0)@example.com" }))
            let connections = Set(entries.map(\.peer))
            #expect(connections.count <= threads, "50 messages over \(connections.count) connections")
        }
    }
}

/// A TCP socket bound to a free loopback port: listening (connections complete but nothing is ever said) or not
/// (connections are refused).
struct LoopbackSocket {
    let descriptor: Int32
    let port: Int

    init(listening: Bool) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound, !listening || listen(descriptor, 16) == 0 else {
            close(descriptor)
            throw HarnessError("bind/listen failed")
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    func stop() { close(self.descriptor) }
}
