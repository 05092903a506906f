public import Foundation
public import GuestPassJSON
public import GuestPassPostgres

/// An app's email settings the server needs before it calls an email function (`guestpass_server.app_email_settings`).
public struct EmailSettings: Sendable {
    /// Whether the app offers email at all.
    public let enabled: Bool
    /// Addresses are confirmed without a mail (GoTrue's `MAILER_AUTOCONFIRM`).
    public let autoconfirm: Bool
    /// Digits per one-time code (6...10).
    public let otpLength: Int
    /// The fewest characters a password may have.
    public let passwordMinLength: Int
    /// Character sets of which a password must hold one character each.
    public let passwordRequiredCharacters: [String]

    public init(enabled: Bool, autoconfirm: Bool, otpLength: Int, passwordMinLength: Int, passwordRequiredCharacters: [String]) {
        self.enabled = enabled
        self.autoconfirm = autoconfirm
        self.otpLength = otpLength
        self.passwordMinLength = passwordMinLength
        self.passwordRequiredCharacters = passwordRequiredCharacters
    }

    init(row: PostgresRow) throws {
        self.enabled = try row.decode(Bool.self, "enabled")
        self.autoconfirm = try row.decode(Bool.self, "autoconfirm")
        self.otpLength = try row.decode(Int.self, "otp_length")
        self.passwordMinLength = try row.decode(Int.self, "password_min_length")
        guard case .array(let sets) = try JSONValue.parse(try row.decode(PostgresJSON.self, "password_required_characters").text) else {
            throw PostgresError(.decoding, message: "app_email_settings: password_required_characters is not an array")
        }
        self.passwordRequiredCharacters = sets.compactMap(\.stringValue)
    }
}

/// One mail's secrets as the database keeps them: the HMAC of the code, the SHA-256 of the link token, and the sealed
/// payload (code and link token) the sender opens. GuestPassApp draws and seals them (`EmailCodeIssuer`).
public struct MailCode: Sendable {
    public let codeHash: String
    public let linkHash: String
    public let payload: [UInt8]

    public init(codeHash: String, linkHash: String, payload: [UInt8]) {
        self.codeHash = codeHash
        self.linkHash = linkHash
        self.payload = payload
    }
}

/// A PKCE challenge sent with a request that mails a code (`code_challenge`, `code_challenge_method`).
public struct PKCEChallenge: Sendable {
    public let challenge: String
    public let method: String

    public init(challenge: String, method: String) {
        self.challenge = challenge
        self.method = method
    }
}

/// A client-address bucket's size for the email functions (`guestpass.email_limit_client`).
public struct ClientBucket: Sendable {
    public let burst: Int
    public let perSecond: Double

    public init(burst: Int, perSecond: Double) {
        self.burst = burst
        self.perSecond = perSecond
    }
}

/// What an email function answered (`guestpass.email_answer`): its status, the seconds to wait when throttled, where a
/// link leads, and the user row (the columns `SessionUser` reads, plus `email_state`) when there is one.
public struct EmailOutcome: Sendable {
    /// The statuses the email functions answer, by their SQL spelling.
    public enum Status: String, Sendable {
        case signedIn = "signed_in"
        case verified, pkce, pending, confirmed, unchanged, partial, updated, sent, silent
        case exists
        case userAlreadyExists = "user_already_exists"
        case emailExists = "email_exists"
        case emailProviderDisabled = "email_provider_disabled"
        case otpDisabled = "otp_disabled"
        case overEmailSendRateLimit = "over_email_send_rate_limit"
        case otpExpired = "otp_expired"
        case invalidCredentials = "invalid_credentials"
        case sessionNotFound = "session_not_found"
        case noAddress = "no_address"
        case reauthenticationNeeded = "reauthentication_needed"
        case reauthenticationNotValid = "reauthentication_not_valid"
        case emailNotConfirmed = "email_not_confirmed"
        case flowStateNotFound = "flow_state_not_found"
        case badCodeVerifier = "bad_code_verifier"
    }

    public let status: Status
    public let waitSeconds: Double?
    public let redirectTo: String?
    /// The session's authentication method (`amr`), when one opened.
    public let authenticationMethod: String?
    /// The user row, when the answer carries a user.
    public let user: PostgresRow?

    init(row: PostgresRow, function: String) throws {
        let status = try row.decode(String.self, "status")
        guard let known = Status(rawValue: status) else {
            throw PostgresError(.protocolViolation, message: "\(function) answered an unknown status \(status)")
        }
        self.status = known
        self.waitSeconds = try row.decode(Double?.self, "wait_seconds")
        self.redirectTo = try row.decode(String?.self, "redirect_to")
        self.authenticationMethod = try row.decode(String?.self, "amr")
        self.user = try row.decode(UUID?.self, "user_id") == nil ? nil : row
    }
}

/// What a password sign-in checks (`guestpass_server.email_password_lookup`): nils when no user holds the address.
public struct PasswordLookup: Sendable {
    public let userID: UUID?
    public let passwordHash: String?
    public let confirmed: Bool
    public let enabled: Bool
}

/// What a password change depends on (`guestpass_server.email_password_state`).
public struct PasswordState: Sendable {
    public let sessionActive: Bool
    public let hasAddress: Bool
    public let isAnonymous: Bool
    public let passwordHash: String?
}

extension ServerFunctions {
    /// `guestpass_server.app_email_settings`: the caller's app's email settings, or nil without an app.
    public func emailSettings(as identity: RequestIdentity) async throws -> EmailSettings? {
        let results = try await self.pool.requestTransaction(
            identity, readOnly: true,
            [
                PostgresStatement(
                    "SELECT enabled, autoconfirm, otp_length, password_min_length, array_to_json(password_required_characters) AS password_required_characters FROM guestpass_server.app_email_settings()",
                    reusesPlan: true)
            ]
        )
        return try results.first?.first.map(EmailSettings.init(row:))
    }

    /// `guestpass_server.email_sign_up`: sign-up with `email` and a password (its hash).
    public func emailSignUp(
        email: String, passwordHash: String, data: [String: JSONValue], mail: MailCode, pkce: PKCEChallenge?, redirectTo: String?,
        sessionID: UUID, refreshTokenHash: String, userAgent: String?, bucket: ClientBucket, as identity: RequestIdentity
    ) async throws -> EmailOutcome {
        try await self.emailCall(
            "email_sign_up", "$1, $2, $3::jsonb, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14",
            [
                email, passwordHash, PostgresJSON(text: JSONValue.object(data).jsonText), mail.codeHash, mail.linkHash, mail.payload,
                pkce?.challenge, pkce?.method, redirectTo, sessionID, refreshTokenHash, Self.agent(userAgent), Int32(bucket.burst),
                bucket.perSecond,
            ], as: identity)
    }

    /// The requests of `guestpass_server.email_send_code`.
    public enum CodeRequest: String, Sendable {
        case otp, recover
        case resendSignup = "resend_signup"
        case resendEmailChange = "resend_email_change"
    }

    /// `guestpass_server.email_send_code`: mails a code for `request` to `email`.
    public func emailSendCode(
        _ request: CodeRequest, email: String, createUser: Bool, data: [String: JSONValue]?, mail: MailCode, pkce: PKCEChallenge?,
        redirectTo: String?, bucket: ClientBucket, as identity: RequestIdentity
    ) async throws -> EmailOutcome {
        try await self.emailCall(
            "email_send_code", "$1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9, $10, $11, $12",
            [
                request.rawValue, email, createUser, data.map { PostgresJSON(text: JSONValue.object($0).jsonText) }, mail.codeHash,
                mail.linkHash, mail.payload, pkce?.challenge, pkce?.method, redirectTo, Int32(bucket.burst), bucket.perSecond,
            ], as: identity)
    }

    /// `guestpass_server.email_change_request`: the caller asks to change its address to `email` (`current`: the code for
    /// the current address, used when the app confirms changes on both).
    public func emailChangeRequest(
        email: String, passwordHash: String?, mail: MailCode, current: MailCode, pkce: PKCEChallenge?, redirectTo: String?,
        bucket: ClientBucket, as identity: RequestIdentity
    ) async throws -> EmailOutcome {
        try await self.emailCall(
            "email_change_request", "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13",
            [
                email, passwordHash, mail.codeHash, mail.linkHash, mail.payload, current.codeHash, current.linkHash, current.payload,
                pkce?.challenge, pkce?.method, redirectTo, Int32(bucket.burst), bucket.perSecond,
            ], as: identity)
    }

    /// What `emailVerify` verifies: a code for an address, or a link token (the link form, or `token_hash`).
    public enum Verification: Sendable {
        case code(email: String, codeHash: String)
        case link(linkHash: String, followed: Bool)
    }

    /// `guestpass_server.email_verify`: verifies a code or link of `type`; opens session `sessionID`, or under PKCE (a
    /// followed link, which alone passes `authCodeHash`) records `authCodeHash`.
    public func emailVerify(
        type: String, _ verification: Verification, redirectTo: String?, sessionID: UUID, refreshTokenHash: String,
        authCodeHash: String? = nil, userAgent: String?, bucket: ClientBucket, as identity: RequestIdentity
    ) async throws -> EmailOutcome {
        var email: String?
        var codeHash: String?
        var linkHash: String?
        var followed = false
        switch verification {
        case .code(let address, let hash): (email, codeHash) = (address, hash)
        case .link(let hash, let isFollowed): (linkHash, followed) = (hash, isFollowed)
        }
        return try await self.emailCall(
            "email_verify", "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12",
            [
                type, email, codeHash, linkHash, followed, redirectTo, sessionID, refreshTokenHash, Self.agent(userAgent), authCodeHash,
                Int32(bucket.burst), bucket.perSecond,
            ], as: identity)
    }

    /// `guestpass_server.email_password_lookup`: the password hash of the user holding `email`, for the server to check.
    public func passwordLookup(email: String, bucket: ClientBucket, as identity: RequestIdentity) async throws -> PasswordLookup {
        let results = try await self.pool.requestTransaction(
            identity,
            [
                PostgresStatement(
                    "SELECT user_id, password_hash, confirmed, enabled FROM guestpass_server.email_password_lookup($1, $2, $3)",
                    [email, Int32(bucket.burst), bucket.perSecond], reusesPlan: true)
            ]
        )
        guard let row = results.first?.first else {
            throw PostgresError(.protocolViolation, message: "email_password_lookup returned no row")
        }
        return PasswordLookup(
            userID: try row.decode(UUID?.self, "user_id"), passwordHash: try row.decode(String?.self, "password_hash"),
            confirmed: try row.decode(Bool?.self, "confirmed") ?? false, enabled: try row.decode(Bool.self, "enabled")
        )
    }

    /// `guestpass_server.email_password_sign_in`: the session of `user` whose password the server checked against
    /// `checkedHash`; `rehash` replaces a hash of older parameters.
    public func passwordSignIn(
        user: UUID, checkedHash: String, rehash: String?, sessionID: UUID, refreshTokenHash: String, userAgent: String?,
        as identity: RequestIdentity
    ) async throws -> EmailOutcome {
        try await self.emailCall(
            "email_password_sign_in", "$1, $2, $3, $4, $5, $6",
            [user, checkedHash, rehash, sessionID, refreshTokenHash, Self.agent(userAgent)], as: identity)
    }

    /// `guestpass_server.email_password_state`: what a password change of the caller depends on; nil without a user.
    public func passwordState(as identity: RequestIdentity) async throws -> PasswordState? {
        let results = try await self.pool.requestTransaction(
            identity, readOnly: true,
            [
                PostgresStatement(
                    "SELECT session_active, has_address, is_anonymous, password_hash FROM guestpass_server.email_password_state()")
            ]
        )
        guard let row = results.first?.first else { return nil }
        return PasswordState(
            sessionActive: try row.decode(Bool.self, "session_active"), hasAddress: try row.decode(Bool.self, "has_address"),
            isAnonymous: try row.decode(Bool.self, "is_anonymous"), passwordHash: try row.decode(String?.self, "password_hash")
        )
    }

    /// `guestpass_server.email_set_password`: sets the caller's password (its hash), with the reauthentication nonce's
    /// HMAC when one was sent.
    public func setPassword(hash: String, nonceHash: String?, as identity: RequestIdentity) async throws -> EmailOutcome {
        try await self.emailCall("email_set_password", "$1, $2", [hash, nonceHash], as: identity)
    }

    /// `guestpass_server.email_reauthenticate`: mails the caller a reauthentication code.
    public func reauthenticate(mail: MailCode, bucket: ClientBucket, as identity: RequestIdentity) async throws -> EmailOutcome {
        try await self.emailCall(
            "email_reauthenticate", "$1, $2, $3, $4, $5",
            [mail.codeHash, mail.linkHash, mail.payload, Int32(bucket.burst), bucket.perSecond], as: identity)
    }

    /// `guestpass_server.exchange_auth_code`: a PKCE authorization code (its hash) and verifier for session `sessionID`.
    public func exchangeAuthCode(
        codeHash: String, verifier: String, verifierS256: String, sessionID: UUID, refreshTokenHash: String, userAgent: String?,
        as identity: RequestIdentity
    ) async throws -> EmailOutcome {
        try await self.emailCall(
            "exchange_auth_code", "$1, $2, $3, $4, $5, $6",
            [codeHash, verifier, verifierS256, sessionID, refreshTokenHash, Self.agent(userAgent)], as: identity)
    }

    /// `guestpass_server.user_email_state`, pipelined after `statement` in one transaction: its rows and the caller's email
    /// state (the GoTrue user fields of its email account).
    func withEmailState(
        _ statement: PostgresStatement, readOnly: Bool, as identity: RequestIdentity
    ) async throws -> (rows: PostgresResult?, emailState: JSONValue) {
        let results = try await self.pool.requestTransaction(
            identity, readOnly: readOnly,
            [statement, PostgresStatement("SELECT guestpass_server.user_email_state() AS email_state", reusesPlan: true)]
        )
        let state = try results.last?.first?.decode(PostgresJSON?.self, "email_state").map { try JSONValue.parse($0.text) }
        return (results.first, state ?? .object([:]))
    }

    private func emailCall(
        _ function: String, _ placeholders: String, _ values: [any PostgresEncodable], as identity: RequestIdentity
    ) async throws -> EmailOutcome {
        let statement = PostgresStatement("SELECT * FROM guestpass_server.\(function)(\(placeholders))", values)
        guard let row = try await self.pool.requestTransaction(identity, [statement]).first?.first else {
            throw PostgresError(.protocolViolation, message: "\(function) returned no row")
        }
        return try EmailOutcome(row: row, function: function)
    }

    private static func agent(_ userAgent: String?) -> String? {
        userAgent.map { String($0.prefix(512)) }
    }
}
