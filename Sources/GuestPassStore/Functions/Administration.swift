public import Foundation
import GuestPassCrypto
public import GuestPassPostgres

/// The operator's operations (`guestpass apps …`, and the test harness), on a pool of the database owner: one typed
/// method each, going through the same SQL functions as the API where one exists.
public struct Administration: Sendable {
    let pool: PostgresPool

    /// Administration over `pool`, which must connect as the database owner.
    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// A new app with its two API keys (returned once; only their hashes are stored), in one transaction.
    public func createApp(name: String) async throws -> (appID: UUID, publishable: APIKey, secret: APIKey) {
        let publishable = try APIKey.generate(kind: .publishable)
        let secret = try APIKey.generate(kind: .secret)
        let appID: UUID = try await self.pool.withConnection { connection in
            try await connection.run { connection in
                try connection.transaction { connection in
                    let id: UUID = try connection.execute("INSERT INTO guestpass.apps (name) VALUES ($1) RETURNING id", [name]).rows[0].decode(at: 0)
                    try publishable.record(for: id, on: connection)
                    try secret.record(for: id, on: connection)
                    return id
                }
            }
        }
        return (appID, publishable, secret)
    }

    /// Whether `publishableKey` and `secretKey` are both current (unrevoked) keys of `app`: a stack kept from an
    /// earlier run can be reused only then. One query.
    public func keysAreCurrent(app: UUID, publishableKey: String, secretKey: String) async throws -> Bool {
        try await self.pool.execute(
            """
            SELECT count(*) FROM guestpass.api_keys
            WHERE app_id = $1 AND revoked_at IS NULL
              AND ((kind = 'publishable' AND key_hash = $2) OR (kind = 'secret' AND key_hash = $3))
            """,
            [app, Digest.sha256Hex(publishableKey), Digest.sha256Hex(secretKey)]
        ).rows[0].decode(Int.self, at: 0) == 2
    }

    /// An app's settings; nil leaves one unchanged.
    public struct AppSettings: Sendable {
        public var dailyFreeAllowance: Int?
        public var welcomeGrantCredits: Int?
        public var deviceCheckTeamID: String?
        public var deviceCheckKeyID: String?
        public var deviceCheckKeyPath: String?
        public var deviceCheckEnvironment: String?
        public var deviceCheckBaseURL: String?
        /// Sign in with Apple's accepted audiences (empty = off).
        public var appleAudiences: [String]?
        /// Sign in with Apple's base URL (the stand-in).
        public var appleBaseURL: String?
        /// The role account setup assigns once.
        public var defaultRole: String?
        /// Sign in with Apple's key, for the code exchange and revocation.
        public var appleTeamID: String?
        public var appleKeyID: String?
        public var appleKeyPath: String?
        /// Share codes: length and alphabet; partners per user.
        public var shareCodeLength: Int?
        public var shareCodeDigitsOnly: Bool?
        public var partnerLimit: Int?
        /// `guestpass prune`: days without a sign-in, refresh or request after which a guest holding nothing goes.
        public var guestIdleDays: Int?
        /// Email: offered, autoconfirm, code digits and lifetime (seconds), the interval between mails to one address,
        /// the hourly cap, secure change, reauthentication for a password change, linking a first Apple sign-in.
        public var emailEnabled: Bool?
        public var emailAutoconfirm: Bool?
        public var emailOTPLength: Int?
        public var emailOTPLifetime: Int?
        public var emailSendInterval: Int?
        public var emailHourlyLimit: Int?
        public var emailSecureChange: Bool?
        public var emailReauthenticatePassword: Bool?
        public var emailLinkApple: Bool?
        /// Passwords: the fewest characters, and the character sets each must draw from.
        public var passwordMinLength: Int?
        public var passwordRequiredCharacters: [String]?
        /// Links: the site URL and the redirect URLs allowed.
        public var siteURL: String?
        public var redirectURLs: [String]?
        /// SMTP: the relay (`smtpPassword` already sealed by the caller), the sender, a private CA; templates as JSON.
        public var smtpHost: String?
        public var smtpPort: Int?
        public var smtpUser: String?
        public var smtpPassword: [UInt8]?
        public var smtpSecurity: String?
        public var smtpSender: String?
        public var smtpSenderName: String?
        public var smtpCAFile: String?
        public var emailTemplates: String?
        /// Storage: the largest upload, and what one user's objects may hold (bytes, objects).
        public var storageUploadBytesLimit: Int64?
        public var storageUserBytesLimit: Int64?
        public var storageUserObjectsLimit: Int?

        public init() {}

        /// Whether no setting is given.
        public var isEmpty: Bool { self.assignments.isEmpty }

        var assignments: [(column: String, value: any PostgresEncodable)] {
            let all: [(String, (any PostgresEncodable)?)] = [
                ("daily_free_allowance", self.dailyFreeAllowance), ("welcome_grant_credits", self.welcomeGrantCredits),
                ("devicecheck_team_id", self.deviceCheckTeamID), ("devicecheck_key_id", self.deviceCheckKeyID),
                ("devicecheck_key_path", self.deviceCheckKeyPath), ("devicecheck_environment", self.deviceCheckEnvironment),
                ("devicecheck_base_url", self.deviceCheckBaseURL),
                ("apple_audiences", self.appleAudiences.map(PostgresTextArray.literal)),
                ("apple_base_url", self.appleBaseURL), ("default_role", self.defaultRole),
                ("apple_team_id", self.appleTeamID), ("apple_key_id", self.appleKeyID), ("apple_key_path", self.appleKeyPath),
                ("share_code_length", self.shareCodeLength), ("share_code_digits_only", self.shareCodeDigitsOnly),
                ("partner_limit", self.partnerLimit), ("guest_idle_days", self.guestIdleDays),
                ("email_enabled", self.emailEnabled), ("email_autoconfirm", self.emailAutoconfirm),
                ("email_otp_length", self.emailOTPLength), ("email_otp_lifetime_seconds", self.emailOTPLifetime),
                ("email_send_interval_seconds", self.emailSendInterval), ("email_hourly_limit", self.emailHourlyLimit),
                ("email_secure_change", self.emailSecureChange), ("email_reauthenticate_password", self.emailReauthenticatePassword),
                ("email_link_apple", self.emailLinkApple), ("password_min_length", self.passwordMinLength),
                ("password_required_characters", self.passwordRequiredCharacters.map(PostgresTextArray.literal)),
                ("site_url", self.siteURL), ("redirect_urls", self.redirectURLs.map(PostgresTextArray.literal)),
                ("smtp_host", self.smtpHost), ("smtp_port", self.smtpPort), ("smtp_user", self.smtpUser),
                ("smtp_password", self.smtpPassword), ("smtp_security", self.smtpSecurity), ("smtp_sender", self.smtpSender),
                ("smtp_sender_name", self.smtpSenderName), ("smtp_ca_file", self.smtpCAFile), ("email_templates", self.emailTemplates),
                ("storage_upload_bytes_limit", self.storageUploadBytesLimit), ("storage_user_bytes_limit", self.storageUserBytesLimit),
                ("storage_user_objects_limit", self.storageUserObjectsLimit),
            ]
            return all.compactMap { column, value in value.map { (column, $0) } }
        }
    }

    /// Changes the settings given in `settings`; false when there is no such app. The table's checks validate them.
    @discardableResult
    public func configureApp(_ app: UUID, _ settings: AppSettings) async throws -> Bool {
        let chosen = settings.assignments
        guard !chosen.isEmpty else { return true }
        // Column names come from the fixed list in AppSettings, never from input; values are bound.
        let sets = chosen.enumerated().map { "\($0.element.column) = $\($0.offset + 2)" }.joined(separator: ", ")
        let updated = try await self.pool.execute("UPDATE guestpass.apps SET \(sets) WHERE id = $1", [app] + chosen.map(\.value))
        return updated.affectedRows == 1
    }

    /// `guestpass.grant_credits_admin`: adds `amount` credits to `user` with a ledger row; the new balance.
    public func grantCredits(user: UUID, amount: Int32, reason: String) async throws -> Int {
        try await self.pool.execute("SELECT guestpass.grant_credits_admin($1, $2, $3)", [user, amount, reason]).rows[0].decode(Int.self, at: 0)
    }

    /// `public.set_premium`, as the user's app's backend would call it (service_role); false when there is no such user.
    public func setPremium(user: UUID, premium: Bool) async throws -> Bool {
        let apps = try await self.pool.execute("SELECT app_id FROM public.users WHERE id = $1", [user]).rows
        guard let app = try apps.first?.decode(UUID.self, at: 0) else { return false }
        _ = try await self.pool.requestTransaction(
            .apiKey(.serviceRole, app: app), [PostgresStatement("SELECT public.set_premium($1, $2)", [user, premium])]
        )
        return true
    }
}
