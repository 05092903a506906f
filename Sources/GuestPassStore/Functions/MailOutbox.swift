public import Foundation
public import GuestPassJSON
public import GuestPassPostgres

/// A mail the sender leased from `guestpass.mail_outbox` (`guestpass_server.mail_claim`), with its app's SMTP settings.
public struct ClaimedMail: Sendable {
    public let id: Int64
    public let appID: UUID
    /// The template kind: confirmation, magic_link, recovery, email_change, reauthentication.
    public let kind: String
    public let recipient: String
    /// The account's address, and the address it is changing to (email_change).
    public let email: String?
    public let newEmail: String?
    /// The `/verify` type of the mail's link, nil for a code-only mail.
    public let verifyType: String?
    public let redirectTo: String?
    /// The sealed code and link token; nil once erased.
    public let payload: [UInt8]?
    /// Tries so far, this one included.
    public let attempts: Int
    public let smtp: SMTPRow?
    /// The app's template for `kind` (`{subject, text, html}`), nil for the built-in one.
    public let template: JSONValue?
    public let siteURL: String?
    public let otpLength: Int

    /// The app's SMTP settings as stored (the password sealed).
    public struct SMTPRow: Sendable, Hashable {
        public let host: String
        public let port: Int?
        public let user: String?
        public let sealedPassword: [UInt8]?
        public let security: String
        public let sender: String?
        public let senderName: String?
        public let caFile: String?
    }

    init(row: PostgresRow) throws {
        self.id = try row.decode(Int64.self, "id")
        self.appID = try row.decode(UUID.self, "app_id")
        self.kind = try row.decode(String.self, "kind")
        self.recipient = try row.decode(String.self, "recipient")
        self.email = try row.decode(String?.self, "email")
        self.newEmail = try row.decode(String?.self, "new_email")
        self.verifyType = try row.decode(String?.self, "verify_type")
        self.redirectTo = try row.decode(String?.self, "redirect_to")
        self.payload = try row.decode([UInt8]?.self, "payload")
        self.attempts = try row.decode(Int.self, "attempts")
        if let host = try row.decode(String?.self, "smtp_host") {
            self.smtp = SMTPRow(
                host: host, port: try row.decode(Int?.self, "smtp_port"), user: try row.decode(String?.self, "smtp_user"),
                sealedPassword: try row.decode([UInt8]?.self, "smtp_password"), security: try row.decode(String.self, "smtp_security"),
                sender: try row.decode(String?.self, "smtp_sender"), senderName: try row.decode(String?.self, "smtp_sender_name"),
                caFile: try row.decode(String?.self, "smtp_ca_file")
            )
        } else {
            self.smtp = nil
        }
        self.template = try row.decode(PostgresJSON?.self, "template").map { try JSONValue.parse($0.text) }
        self.siteURL = try row.decode(String?.self, "site_url")
        self.otpLength = try row.decode(Int.self, "otp_length")
    }
}

/// The mail sender's calls on `guestpass.mail_outbox` (repeatable/15_mail_outbox.sql), as the server's login role:
/// lease due mail, record each outcome, read the queue's depth. Each call is one autocommitted statement.
public struct MailOutbox: Sendable {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Leases up to `limit` due mails for `lease` (`mail_claim`: FOR UPDATE SKIP LOCKED; other senders take others).
    public func claim(limit: Int, lease: Duration) async throws -> [ClaimedMail] {
        let result = try await self.pool.execute(
            "SELECT * FROM guestpass_server.mail_claim($1, $2)", [Int32(limit), Int32(lease.components.seconds)]
        )
        return try result.rows.map(ClaimedMail.init(row:))
    }

    /// The relay accepted mail `id` (`mail_sent`: its code erased).
    public func sent(_ id: Int64) async throws {
        _ = try await self.pool.execute("SELECT guestpass_server.mail_sent($1)", [id])
    }

    /// Sending mail `id` failed (`mail_failed`): retried with backoff, or given up when `permanent` or after
    /// `maxAttempts`. `error` must name no secret.
    public func failed(_ id: Int64, error: String, permanent: Bool, maxAttempts: Int) async throws {
        _ = try await self.pool.execute(
            "SELECT guestpass_server.mail_failed($1, $2, $3, $4)", [id, error, permanent, Int32(maxAttempts)]
        )
    }

    /// Mails waiting and the age of the oldest, in seconds (`mail_queue_state`).
    public func state() async throws -> (queued: Int, oldestAgeSeconds: Double) {
        let result = try await self.pool.execute("SELECT queued, oldest_age_seconds FROM guestpass_server.mail_queue_state()")
        guard let row = result.first else { return (0, 0) }
        return (try row.decode(Int.self, "queued"), try row.decode(Double.self, "oldest_age_seconds"))
    }
}
