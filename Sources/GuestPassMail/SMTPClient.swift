public import Logging
import NIOCore
import NIOPosix

/// Sends mail over SMTP with libcurl: STARTTLS (required) or implicit TLS, AUTH, a private CA, one recipient per
/// message.
///
/// **Threading.** `curl_easy_perform` blocks, so it never runs on Swift's cooperative pool: every send runs on a
/// `NIOThreadPool` of `threads` threads owned by the client, so at most `threads` messages are in flight at once and
/// further sends wait their turn. A send that is cancelled while waiting for a thread is not made (it throws
/// `.other`); once started it runs to its end, bounded by `SMTPSettings.timeout`.
///
/// **Connections.** A handle that sent successfully is kept idle, by settings (at most `threads` per settings and
/// `max(8, 4 × threads)` in all, each for at most 60 s), and libcurl reuses its open, authenticated SMTP connection
/// for the next message with equal settings. A handle whose send failed is discarded, and its connection with it.
///
/// **Lifetime.** Call `shutdown()` when done; it closes the idle connections (`QUIT`) and stops the threads. A client
/// released without it still stops its threads.
public final class SMTPClient: Sendable {
    private let pool: NIOThreadPool
    private let idle: IdleHandles
    private let logger: Logger

    /// Starts the client's `threads` blocking threads (at least one).
    public init(threads: Int = 2, logger: Logger) {
        precondition(threads >= 1, "an SMTP client needs at least one thread")
        self.pool = NIOThreadPool(numberOfThreads: threads)
        self.pool.start()
        self.idle = IdleHandles(perSettings: threads, total: max(8, 4 * threads), maxIdle: .seconds(60))
        self.logger = logger
    }

    deinit {
        // The idle handles are freed on a pool thread (or the shutdown queue), never on the releasing thread.
        let idle = self.idle
        self.pool.submit { _ in idle.removeAll() }
        self.pool.shutdownGracefully { _ in }
    }

    /// Hands `message` to the relay described by `settings` (`MAIL FROM` the sender, `RCPT TO` the recipient, the
    /// rendered message as `DATA`); returns once the server accepted it.
    public func send(_ message: MailMessage, via settings: SMTPSettings) async throws(SMTPError) {
        let payload = message.rendered()
        let sender = message.from.address
        let recipient = message.to.address
        let idle = self.idle
        let outcome: Result<Bool, SMTPError>
        do {
            outcome = try await self.pool.runIfActive {
                Result { () throws(SMTPError) -> Bool in
                    let reused = idle.take(for: settings)
                    let handle: CurlEasyHandle
                    if let reused { handle = reused } else { handle = try CurlEasyHandle.make(for: settings) }
                    try handle.send(sender: sender, recipient: recipient, payload: payload)
                    idle.put(handle)
                    return reused != nil
                }
            }
        } catch is CancellationError {
            throw SMTPError(.other, "cancelled before the message was sent")
        } catch {
            throw SMTPError(.other, "the SMTP client is shut down")
        }
        var metadata: Logger.Metadata = ["smtp.host": "\(settings.host)", "mail.message_id": "\(message.messageID)"]
        switch outcome {
        case .success(let reused):
            metadata["smtp.connection_reused"] = "\(reused)"
            self.logger.debug("mail sent", metadata: metadata)
        case .failure(let error):
            metadata["error"] = "\(error)"
            self.logger.debug("mail not sent", metadata: metadata)
            throw error
        }
    }

    /// Closes the idle connections and stops the threads; sends made afterwards throw `.other`.
    public func shutdown() async {
        let idle = self.idle
        try? await self.pool.runIfActive { idle.removeAll() }
        try? await self.pool.shutdownGracefully()
    }

    /// How many handles (open connections) are idle, for tests.
    var idleHandleCount: Int { self.idle.idleCount }
}
