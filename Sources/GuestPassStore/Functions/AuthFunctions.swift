public import Foundation
public import GuestPassJSON
public import GuestPassPostgres

/// The server-side SQL functions (`guestpass_server.*`), one typed Swift method each: the only place the routes' SQL
/// text lives. Each runs as one request transaction (one round trip) under the identity it is given, which the caller
/// (GuestPassApp's authentication) chose; nothing here trusts a value for a role or a claim. Methods take plain values
/// (hashes, ids, JSON documents), never an HTTP request, and throw `PostgresError` (a status no function documents is a
/// `.protocolViolation`); the HTTP layer maps them.
public struct ServerFunctions: Sendable {
    let pool: PostgresPool

    /// The functions over `pool` (the primary: most of them write).
    public init(pool: PostgresPool) {
        self.pool = pool
    }
}

/// The sign-up buckets' sizes, passed with every sign-up (they come from configuration: GuestPassApp builds them from
/// its `AuthConfiguration`).
public struct SignUpLimits: Sendable {
    public let burstPerIP: Int
    public let perSecondPerIP: Double
    public let burstPerApp: Int
    public let perSecondPerApp: Double

    public init(burstPerIP: Int, perSecondPerIP: Double, burstPerApp: Int, perSecondPerApp: Double) {
        self.burstPerIP = burstPerIP
        self.perSecondPerIP = perSecondPerIP
        self.burstPerApp = burstPerApp
        self.perSecondPerApp = perSecondPerApp
    }
}

/// What `guestpass_server.refresh_session` answered.
public enum RefreshOutcome {
    /// The token was the active one (rotated), or a replay the reuse rules allow (reused): the active session.
    case active(PostgresRow, counter: Int)
    case alreadyUsed
    case sessionNotFound
    case tokenNotFound
}

extension ServerFunctions {
    /// One round trip to the database (readiness).
    public func ping() async throws {
        try await self.pool.execute("SELECT 1")
    }

    /// `guestpass_server.resolve_api_key`: the app and role of the key whose SHA-256 is `hash`, or nil.
    public func resolveAPIKey(hash: String) async throws -> APIKeyGrant? {
        let results = try await self.pool.requestTransaction(
            .apiKey(.anon, app: nil), readOnly: true,
            [PostgresStatement("SELECT app_id, kind FROM guestpass_server.resolve_api_key($1)", [hash], reusesPlan: true)]
        )
        guard let row = results.first?.first else { return nil }
        let kind = try row.decode(String.self, "kind")
        return APIKeyGrant(appID: try row.decode(UUID.self, "app_id"), role: kind == APIKey.Kind.secret.rawValue ? .serviceRole : .anon)
    }

    /// `guestpass_server.sign_up_guest`: the guest (found or created), its new session `sessionID` and refresh token 0.
    /// `deviceSecretHash` (nil: no device), `device` (the device facts) and `userMetadata` come from the validated
    /// sign-up `data`.
    public func signUpGuest(
        deviceSecretHash: String?, device: [String: JSONValue]?, userMetadata: [String: JSONValue], limits: SignUpLimits, userAgent: String?,
        sessionID: UUID, refreshTokenHash: String, as identity: RequestIdentity
    ) async throws -> PostgresRow {
        let statement = PostgresStatement(
            "SELECT * FROM guestpass_server.sign_up_guest($1, $2::jsonb, $3::jsonb, $4, $5, $6, $7, $8, $9, $10, $11)",
            [
                deviceSecretHash, device.map { PostgresJSON(text: JSONValue.object($0).jsonText) },
                PostgresJSON(text: JSONValue.object(userMetadata).jsonText), identity.clientAddress,
                Int32(limits.burstPerIP), limits.perSecondPerIP, Int32(limits.burstPerApp), limits.perSecondPerApp,
                userAgent.map { String($0.prefix(512)) }, sessionID, refreshTokenHash,
            ],
            reusesPlan: true
        )
        guard let row = try await self.pool.requestTransaction(identity, [statement]).first?.first else {
            throw PostgresError(.protocolViolation, message: "sign_up_guest returned no row")
        }
        return row
    }

    /// `guestpass_server.refresh_session`: rotates `presented` (counter `counter` of `session`) to `nextHash`.
    public func refreshSession(
        session: UUID, counter: Int, presentedHash: String, nextHash: String, reuseWindow: Double, as identity: RequestIdentity
    ) async throws -> RefreshOutcome {
        let results = try await self.pool.requestTransaction(
            identity,
            [
                PostgresStatement(
                    "SELECT * FROM guestpass_server.refresh_session($1, $2, $3, $4, $5)",
                    [session, Int32(counter), presentedHash, nextHash, reuseWindow], reusesPlan: true
                )
            ]
        )
        guard let row = results.first?.first else { return .tokenNotFound }
        switch try row.decode(String.self, "status") {
        case "rotated", "reused": return .active(row, counter: try row.decode(Int.self, "active_counter"))
        case "refresh_token_already_used": return .alreadyUsed
        case "session_not_found": return .sessionNotFound
        case "refresh_token_not_found": return .tokenNotFound
        case let status: throw PostgresError(.protocolViolation, message: "refresh_session answered an unknown status \(status)")
        }
    }

    /// A user as `GET /auth/v1/user` shows it: the profile row and the GoTrue fields of its email account.
    public struct Profile: Sendable {
        public let row: PostgresRow
        public let emailState: JSONValue
    }

    /// `guestpass_server.current_user_profile` (with `user_email_state`, one round trip): the caller's user, or nil when
    /// its session is gone.
    public func currentUserProfile(as identity: RequestIdentity) async throws -> Profile? {
        let (rows, state) = try await self.withEmailState(
            PostgresStatement("SELECT * FROM guestpass_server.current_user_profile()", reusesPlan: true), readOnly: true, as: identity
        )
        guard let row = rows?.first, try row.decode(Bool.self, "session_active") else { return nil }
        return Profile(row: row, emailState: state)
    }

    /// `guestpass_server.update_user` (with `user_email_state`): applies `data` to the caller's profile; the user as
    /// current_user_profile shows it, or nil when the session is gone.
    public func updateUser(data: [String: JSONValue], as identity: RequestIdentity) async throws -> Profile? {
        let (rows, state) = try await self.withEmailState(
            PostgresStatement("SELECT * FROM guestpass_server.update_user($1::jsonb)", [PostgresJSON(text: JSONValue.object(data).jsonText)]),
            readOnly: false, as: identity
        )
        guard let row = rows?.first, try row.decode(Bool.self, "session_active") else { return nil }
        return Profile(row: row, emailState: state)
    }

    /// The scopes of `guestpass_server.sign_out`.
    public enum SignOutScope: String, Sendable {
        case global, local, others
    }

    /// `guestpass_server.sign_out`: revokes the caller's sessions of `scope`.
    public func signOut(_ scope: SignOutScope, as identity: RequestIdentity) async throws {
        _ = try await self.pool.requestTransaction(identity, [PostgresStatement("SELECT guestpass_server.sign_out($1)", [scope.rawValue])])
    }
}

/// What `guestpass_server.sign_in_with_identity` answered.
public enum IdentitySignInOutcome {
    /// Signed in (`created` a new user, or `linked` to the caller): the user row.
    case signedIn(PostgresRow)
    case identityAlreadyExists
    case sessionNotFound
}

extension ServerFunctions {
    /// `guestpass_server.app_apple_settings`: the caller's app's Sign in with Apple settings, or nil without an app.
    public func appleSettings(as identity: RequestIdentity) async throws -> AppleSettings? {
        let results = try await self.pool.requestTransaction(
            identity, readOnly: true,
            [
                PostgresStatement(
                    "SELECT array_to_json(audiences) AS audiences, base_url, team_id, key_id, key_path FROM guestpass_server.app_apple_settings()")
            ]
        )
        return try results.first?.first.map(AppleSettings.init(row:))
    }

    /// `guestpass_server.sign_in_with_identity`: signs in with (or, `link`, links the caller to) a verified Apple identity
    /// (`subject`, `audience`, `email`, `isPrivateEmail`: the claims of an identity token GuestPassApple verified).
    /// `appleRefreshToken` (Apple's, sealed) is kept in the same transaction (`store_apple_refresh_token`).
    public func signInWithIdentity(
        subject: String, audience: String, email: String?, isPrivateEmail: Bool, link: Bool, userAgent: String?, sessionID: UUID,
        refreshTokenHash: String, appleRefreshToken: [UInt8]? = nil, as identity: RequestIdentity
    ) async throws -> IdentitySignInOutcome {
        var statements = [PostgresStatement]()
        statements.append(
            PostgresStatement(
                "SELECT * FROM guestpass_server.sign_in_with_identity('apple', $1, $2, $3, $4, $5, $6, $7, $8)",
                [
                    subject, email, isPrivateEmail, link, userAgent.map { String($0.prefix(512)) }, identity.clientAddress,
                    sessionID, refreshTokenHash,
                ]
            ))
        if let appleRefreshToken {
            statements.append(
                PostgresStatement(
                    "SELECT guestpass_server.store_apple_refresh_token($1, $2, $3)", [subject, audience, appleRefreshToken]
                ))
        }
        guard let row = try await self.pool.requestTransaction(identity, statements).first?.first else {
            throw PostgresError(.protocolViolation, message: "sign_in_with_identity returned no row")
        }
        switch try row.decode(String.self, "status") {
        case "signed_in", "created", "linked": return .signedIn(row)
        case "identity_already_exists": return .identityAlreadyExists
        case "session_not_found": return .sessionNotFound
        case let status: throw PostgresError(.protocolViolation, message: "sign_in_with_identity answered an unknown status \(status)")
        }
    }
}
