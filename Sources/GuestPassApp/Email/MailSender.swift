import Foundation
import GuestPassJSON
import GuestPassMail
import GuestPassStore
import Logging
import ServiceLifecycle

/// Delivers the outbox (`guestpass.mail_outbox`, repeatable/15_mail_outbox.sql) over SMTP: a swift-service-lifecycle
/// service every server runs.
///
/// It leases due mail in batches (`MailOutbox.claim`: FOR UPDATE SKIP LOCKED, so replicas share the queue), opens each
/// payload (the code and link token, sealed by `EmailCodeIssuer`), renders the app's template (or the built-in one),
/// sends through `SMTPClient` (libcurl; connections reused per relay) a few at a time, and records the outcome: sent
/// (the payload erased), retried with backoff (a transient failure: the relay down, a 4xx), or given up (a permanent
/// failure, or the last of `maxAttempts`). When the queue is empty it looks again every `idleInterval`; a full batch is
/// followed at once by the next. A mail whose lease runs out unrecorded (a crash mid-send) is sent again: delivery is
/// at least once, exactly once unless the server dies between the relay's acceptance and the record.
struct MailSender: Service, CustomStringConvertible {
    /// What swift-service-lifecycle logs of it: the name, never its keys.
    var description: String { "MailSender" }

    let outbox: MailOutbox
    let client: SMTPClient
    let codes: EmailCodeIssuer
    let passwords: SMTPPasswordSealer
    /// Where mailed links point (`GUESTPASS_PUBLIC_URL`): the server as users' browsers reach it.
    let publicURL: @Sendable () -> String
    let logger: Logger
    var batchSize = 100
    var concurrency = 8
    var lease: Duration = .seconds(60)
    var idleInterval: Duration = .milliseconds(250)
    var maxAttempts = 10

    /// The process's one SMTP client (its libcurl threads and idle connections are shared by every app it builds).
    static let sharedClient = SMTPClient(threads: 4, logger: Logger(label: "guestpass.mail"))

    func run() async throws {
        await withGracefulShutdownHandler {
            var lastGauge = ContinuousClock.now - .seconds(10)
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                var claimed = 0
                do {
                    let batch = try await self.outbox.claim(limit: self.batchSize, lease: self.lease)
                    claimed = batch.count
                    await self.deliver(batch)
                    if ContinuousClock.now - lastGauge > .seconds(5) {
                        lastGauge = .now
                        let state = try await self.outbox.state()
                        ServiceMetrics.mailQueue(waiting: state.queued, oldestAgeSeconds: state.oldestAgeSeconds)
                    }
                } catch {
                    self.logger.warning("mail outbox unavailable", metadata: ["error": "\(type(of: error))"])
                }
                if claimed < self.batchSize {
                    try? await Task.sleep(for: claimed == 0 ? self.idleInterval : .milliseconds(10))
                }
            }
        } onGracefulShutdown: {
        }
    }

    /// Sends `batch`, at most `concurrency` at once, recording each outcome.
    func deliver(_ batch: [ClaimedMail]) async {
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for mail in batch {
                if running == self.concurrency {
                    await group.next()
                    running -= 1
                }
                group.addTask { await self.deliver(mail) }
                running += 1
            }
        }
    }

    private func deliver(_ mail: ClaimedMail) async {
        do {
            let (message, settings) = try self.prepare(mail)
            try await self.client.send(message, via: settings)
            try await self.outbox.sent(mail.id)
            ServiceMetrics.mailSent()
        } catch let error as SMTPError {
            await self.failed(mail, "\(error)", permanent: error.isPermanent)
        } catch let error as MailDeliveryError {
            await self.failed(mail, error.message, permanent: error.permanent)
        } catch {
            // The outcome could not be recorded (the database): the lease runs out and the mail is tried again.
            self.logger.warning("mail outcome not recorded", metadata: ["mail.id": "\(mail.id)", "error": "\(type(of: error))"])
        }
    }

    private func failed(_ mail: ClaimedMail, _ reason: String, permanent: Bool) async {
        let givesUp = permanent || mail.attempts >= self.maxAttempts
        ServiceMetrics.mailFailed(final: givesUp)
        self.logger.warning(
            "mail not sent", metadata: ["mail.id": "\(mail.id)", "mail.kind": "\(mail.kind)", "error": "\(reason)", "final": "\(givesUp)"])
        do {
            try await self.outbox.failed(mail.id, error: reason, permanent: permanent, maxAttempts: self.maxAttempts)
        } catch {
            self.logger.warning("mail outcome not recorded", metadata: ["mail.id": "\(mail.id)", "error": "\(type(of: error))"])
        }
    }

    /// The message and relay of `mail`: its payload opened, its template rendered, its app's SMTP settings.
    func prepare(_ mail: ClaimedMail) throws -> (MailMessage, SMTPSettings) {
        guard let smtp = mail.smtp else { throw MailDeliveryError("the app has no SMTP relay configured", permanent: false) }
        guard let payload = mail.payload, let secrets = self.codes.open(payload, app: mail.appID) else {
            // Not given up at once: mid-way through a key change, another server (with the key that sealed it) may send it.
            throw MailDeliveryError("the mail's payload does not open (another server key?)", permanent: false)
        }
        guard let kind = MailTemplateKind(rawValue: mail.kind) else { throw MailDeliveryError("unknown mail kind", permanent: true) }
        var link = ""
        if let type = mail.verifyType {
            var components = URLComponents(string: self.publicURL() + "/auth/v1/verify")
            components?.queryItems =
                [
                    URLQueryItem(name: "token", value: secrets.link), URLQueryItem(name: "type", value: type),
                    URLQueryItem(name: "app", value: mail.appID.lowercasedString),
                ] + (mail.redirectTo.map { [URLQueryItem(name: "redirect_to", value: $0)] } ?? [])
            link = components?.string ?? ""
        }
        let variables = MailTemplateVariables(
            token: secrets.code, tokenHash: secrets.link, confirmationURL: link, siteURL: mail.siteURL ?? "",
            redirectTo: mail.redirectTo ?? "", email: mail.email ?? "", newEmail: mail.newEmail ?? "")
        let custom = mail.template.flatMap(Self.template(from:))
        let rendered: (subject: String, text: String, html: String?)
        do {
            rendered = try MailTemplates.render(kind: kind, template: custom, variables: variables)
        } catch {
            throw MailDeliveryError("the app's \(mail.kind) template does not render", permanent: true)
        }
        let password = try smtp.sealedPassword.map { box in
            guard let password = self.passwords.open(box, app: mail.appID) else {
                throw MailDeliveryError("the SMTP password does not open (another server key?)", permanent: false)
            }
            return password
        }
        let security: SMTPSettings.Security =
            switch smtp.security {
            case "tls": .implicitTLS
            case "plain": .plain
            default: .startTLS
            }
        let settings: SMTPSettings
        let message: MailMessage
        do {
            settings = try SMTPSettings(
                host: smtp.host, port: smtp.port, username: smtp.user, password: password, security: security, caFile: smtp.caFile)
            let from = try MailAddress(smtp.sender ?? "noreply@\(smtp.host)", displayName: smtp.senderName)
            let to = try MailAddress(mail.recipient)
            message = try MailMessage(from: from, to: to, subject: rendered.subject, text: rendered.text, html: rendered.html)
        } catch {
            throw MailDeliveryError("\(error)", permanent: true)
        }
        return (message, settings)
    }

    /// An app's stored template (`{subject, text, html?}`), or nil when it is not one.
    static func template(from value: JSONValue) -> MailTemplate? {
        guard let members = value.objectValue, let subject = members["subject"]?.stringValue, let text = members["text"]?.stringValue else {
            return nil
        }
        return MailTemplate(subject: subject, text: text, html: members["html"]?.stringValue)
    }
}

/// Why a mail could not be sent before any SMTP traffic (configuration, payload, template); never names a secret.
struct MailDeliveryError: Error {
    let message: String
    let permanent: Bool

    init(_ message: String, permanent: Bool) {
        self.message = message
        self.permanent = permanent
    }
}
