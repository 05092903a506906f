public import Foundation
public import GuestPassJSON
public import GuestPassPostgres

/// The operator console's SQL: one call of a `guestpass_console` function per method, on a pool logged in as
/// `guestpass_console` (a role that may execute those functions and nothing else).
///
/// Every method but the sign-in ones takes `session`, the SHA-256 (hex) of the operator's session cookie; the function
/// resolves the operator from it and refuses what is not theirs, so scope is decided in SQL, not here. Pages come back
/// as the functions' JSON (`JSONValue`), which the console's templates read by their snake_case keys. Refusals are
/// typed (`ConsoleStoreError`).
public struct ConsoleStore: Sendable {
    let pool: PostgresPool

    /// The store over `pool`, which must connect as `guestpass_console`.
    public init(pool: PostgresPool) {
        self.pool = pool
    }

    // MARK: Sign-in

    /// What a sign-in checks (`guestpass_console.sign_in_lookup`).
    public func signInLookup(email: String, address: String) async throws -> ConsoleSignInLookup {
        let json = try await self.json("SELECT guestpass_console.sign_in_lookup($1, $2)", [email, address])
        let members = json.objectValue ?? [:]
        let secret = members["totp_secret"]?.stringValue.flatMap { Data(base64Encoded: $0, options: .ignoreUnknownCharacters) }
        return ConsoleSignInLookup(
            limited: members["limited"] == .bool(true),
            operatorID: members["operator_id"]?.stringValue.flatMap(UUID.init(uuidString:)),
            passwordHash: members["password_hash"]?.stringValue,
            totpSecret: secret.map(Array.init),
            totpRequired: members["totp_required"] == .bool(true))
    }

    /// Records a failed password or code.
    public func signInFailed(email: String, address: String) async throws {
        try await self.call("SELECT guestpass_console.sign_in_failed($1, $2)", [email, address])
    }

    /// Opens a session for `operator` (its password matched).
    public func signInSucceeded(operatorID: UUID, tokenHash: String, secondFactorDone: Bool) async throws {
        try await self.call("SELECT guestpass_console.sign_in_succeeded($1, $2, $3)", [operatorID, tokenHash, secondFactorDone])
    }

    /// The session's TOTP code was right for `step`: true when the session is now complete, false when a code of
    /// that step or a later one was used before (a replayed code).
    public func secondFactorDone(session: String, step: UInt64) async throws -> Bool {
        try await self.run("SELECT guestpass_console.second_factor_done($1, $2)", [session, Int64(step)]).rows[0].decode(Bool.self, at: 0)
    }

    /// Ends the session.
    public func signOut(session: String) async throws {
        try await self.call("SELECT guestpass_console.sign_out($1)", [session])
    }

    /// The live session's operator (`ConsoleStoreError.notSignedIn` when there is none).
    public func session(_ session: String) async throws -> ConsoleSessionInfo {
        let members = try await self.json("SELECT guestpass_console.session($1)", [session]).objectValue ?? [:]
        guard let email = members["email"]?.stringValue else { throw ConsoleStoreError.notSignedIn }
        return ConsoleSessionInfo(
            email: email, allApps: members["all_apps"] == .bool(true), secondFactorDone: members["second_factor_done"] == .bool(true))
    }

    // MARK: Apps

    /// The operator's apps with their counts.
    public func apps(session: String) async throws -> JSONValue {
        try await self.json("SELECT guestpass_console.apps($1)", [session])
    }

    /// One app's page.
    public func app(session: String, app: UUID) async throws -> JSONValue {
        try await self.json("SELECT guestpass_console.app($1, $2)", [session, app])
    }

    /// Sets an app's daily free allowance and welcome grant.
    public func setAppQuota(session: String, app: UUID, dailyFreeAllowance: Int, welcomeGrantCredits: Int) async throws {
        try await self.call(
            "SELECT guestpass_console.set_app_quota($1, $2, $3::integer, $4::integer)", [session, app, dailyFreeAllowance, welcomeGrantCredits])
    }

    /// Records a key the server generated (its hash and prefix only); its id.
    @discardableResult
    public func addKey(session: String, app: UUID, key: APIKey) async throws -> UUID {
        let rows = try await self.run(
            "SELECT guestpass_console.add_key($1, $2, $3, $4, $5)", [session, app, key.kind.rawValue, key.hash, key.prefix])
        return try rows.rows[0].decode(UUID.self, at: 0)
    }

    /// Revokes a live key of the app.
    public func revokeKey(session: String, app: UUID, key: UUID) async throws {
        try await self.call("SELECT guestpass_console.revoke_key($1, $2, $3)", [session, app, key])
    }

    // MARK: Users

    /// The users found by one exact look-up (`kind`: user_id, device_id, email, share_code, apple_subject).
    public func findUsers(session: String, kind: String, value: String) async throws -> JSONValue {
        try await self.json("SELECT guestpass_console.find_users($1, $2, $3)", [session, kind, value])
    }

    /// A user's page.
    public func userPage(session: String, user: UUID) async throws -> JSONValue {
        try await self.json("SELECT guestpass_console.user_page($1, $2)", [session, user])
    }

    /// Grants (> 0) or takes (< 0) credits; the new balance.
    @discardableResult
    public func changeCredits(session: String, user: UUID, delta: Int, reason: String) async throws -> Int {
        let rows = try await self.run("SELECT guestpass_console.change_credits($1, $2, $3::integer, $4)", [session, user, delta, reason])
        return try rows.rows[0].decode(Int.self, at: 0)
    }

    /// Premium on or off.
    public func setPremium(session: String, user: UUID, premium: Bool) async throws {
        try await self.call("SELECT guestpass_console.set_premium($1, $2, $3)", [session, user, premium])
    }

    /// Revokes a live device of the user (its sessions and refresh tokens end).
    public func revokeDevice(session: String, user: UUID, device: UUID) async throws {
        try await self.call("SELECT guestpass_console.revoke_device($1, $2, $3)", [session, user, device])
    }

    /// Ends a live session of the user.
    public func endSession(session: String, user: UUID, sessionID: UUID) async throws {
        try await self.call("SELECT guestpass_console.end_session($1, $2, $3)", [session, user, sessionID])
    }

    /// Deletes the user as their own deletion does (rows of `schemas` included): their app, and the Apple refresh
    /// tokens they held, for the server to revoke.
    public func deleteUser(session: String, user: UUID, schemas: [String]) async throws -> (
        app: UUID, appleTokens: [ServerFunctions.DeletedAppleToken]
    ) {
        let members =
            try await self.json("SELECT guestpass_console.delete_user($1, $2, $3::text[])", [session, user, PostgresTextArray.literal(schemas)])
            .objectValue ?? [:]
        guard let app = members["app_id"]?.stringValue.flatMap(UUID.init(uuidString:)) else { throw ConsoleStoreError.notFound }
        guard case .array(let items) = members["apple_tokens"] ?? .array([]) else { return (app, []) }
        let tokens = items.compactMap { item -> ServerFunctions.DeletedAppleToken? in
            guard let object = item.objectValue, let subject = object["subject"]?.stringValue, let clientID = object["client_id"]?.stringValue,
                let sealed = object["sealed"]?.stringValue.flatMap({ Data(base64Encoded: $0, options: .ignoreUnknownCharacters) })
            else { return nil }
            return ServerFunctions.DeletedAppleToken(subject: subject, clientID: clientID, sealed: Array(sealed))
        }
        return (app, tokens)
    }

    /// 50 audit rows, newest first (of `app`, or of every app of the operator), older than `before` when given.
    public func audit(session: String, app: UUID?, before: Int64?) async throws -> JSONValue {
        try await self.json("SELECT guestpass_console.audit($1, $2, $3)", [session, app, before])
    }

    // MARK: Running

    private func run(_ sql: String, _ parameters: [any PostgresEncodable]) async throws -> PostgresResult {
        do {
            return try await self.pool.execute(sql, parameters)
        } catch let error as PostgresError {
            throw ConsoleStoreError(error) ?? error
        }
    }

    private func call(_ sql: String, _ parameters: [any PostgresEncodable]) async throws {
        _ = try await self.run(sql, parameters)
    }

    private func json(_ sql: String, _ parameters: [any PostgresEncodable]) async throws -> JSONValue {
        let result = try await self.run(sql, parameters)
        guard let text = try result.rows.first?.decode(String?.self, at: 0) else { return .null }
        return try JSONValue.parse(text)
    }
}

/// What `guestpass_console.sign_in_lookup` tells a sign-in.
public struct ConsoleSignInLookup: Sendable, Equatable {
    /// Too many failures of this email or address lately: refuse without checking anything.
    public let limited: Bool
    /// The operator with that email (nil: none, or `limited`).
    public let operatorID: UUID?
    public let passwordHash: String?
    public let totpSecret: [UInt8]?
    public let totpRequired: Bool
}

/// A live console session's operator.
public struct ConsoleSessionInfo: Sendable, Equatable {
    public let email: String
    public let allApps: Bool
    public let secondFactorDone: Bool
}

/// Why the console's SQL refused.
public enum ConsoleStoreError: Error, Equatable, Sendable {
    /// No live session (GPC01).
    case notSignedIn
    /// Another operator's app or user (42501).
    case forbidden
    /// No such user, app, device, session or key (P0002).
    case notFound
    /// A value the function refuses (22023), with its message.
    case invalid(String)

    /// The console error of a PostgreSQL error, if it is one.
    init?(_ error: PostgresError) {
        switch error.sqlState {
        case .consoleNotSignedIn?: self = .notSignedIn
        case .insufficientPrivilege?: self = .forbidden
        case .noDataFound?: self = .notFound
        case .invalidParameterValue?: self = .invalid(error.message)
        default: return nil
        }
    }
}
