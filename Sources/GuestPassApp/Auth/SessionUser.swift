import Foundation
import GuestPassPostgres
import GuestPassJSON

/// A user as a session response shows it, with the session it belongs to.
struct SessionUser: Sendable {
    let id: UUID
    let appID: UUID
    let sessionID: UUID
    let deviceID: UUID?
    let isAnonymous: Bool
    let email: String?
    let userMetadata: JSONValue
    let appMetadata: JSONValue
    let createdAt: Date
    let updatedAt: Date
    let lastSignInAt: Date?
    /// GoTrue identity objects (`guestpass.user_identities`), when the function returned them.
    let identities: [JSONValue]
    /// The GoTrue fields of the user's email account (`guestpass.user_email_state`: email_confirmed_at, new_email, …),
    /// already formatted; an empty object for a user without one.
    var emailState: JSONValue = .object([:])
    /// The session's authentication method for the token's `amr` (password, otp, …); nil: anonymous or oauth.
    var authenticationMethod: String?

    /// Reads the user columns shared by the sign-up, refresh and profile functions; `identities` from the row's
    /// `identities` column when `withIdentities` (sign-in with a provider, the profile).
    init(row: PostgresRow, appID: UUID, sessionID: UUID, deviceID: UUID?, lastSignInAt: Date?, withIdentities: Bool = false) throws {
        self.id = try row.decode(UUID.self, "user_id")
        self.appID = appID
        self.sessionID = sessionID
        self.deviceID = deviceID
        self.isAnonymous = try row.decode(Bool.self, "is_anonymous")
        self.email = try row.decode(String?.self, "email")
        self.userMetadata = try JSONValue.parse(try row.decode(PostgresJSON.self, "user_metadata").text)
        self.appMetadata = try JSONValue.parse(try row.decode(PostgresJSON.self, "app_metadata").text)
        self.createdAt = try row.decode(Date.self, "created_at")
        self.updatedAt = try row.decode(Date.self, "updated_at")
        self.lastSignInAt = lastSignInAt
        if withIdentities, case .array(let identities) = try JSONValue.parse(try row.decode(PostgresJSON.self, "identities").text) {
            self.identities = identities
        } else {
            self.identities = []
        }
        if let cell = try? row.cell("email_state"), let text = cell.text {
            self.emailState = try JSONValue.parse(text)
        }
        if let cell = try? row.cell("amr") { self.authenticationMethod = cell.text }
    }
}

/// The `User` object of GoTrue's responses (what the Supabase SDKs decode).
struct UserResponse: Encodable {
    let id: String
    let aud: String
    let role: String
    let email: String
    let phone: String
    let last_sign_in_at: String?
    let app_metadata: JSONValue
    let user_metadata: JSONValue
    let identities: [JSONValue]
    let created_at: String
    let updated_at: String
    let is_anonymous: Bool
    let email_confirmed_at: String?
    let confirmed_at: String?
    let new_email: String?
    let confirmation_sent_at: String?
    let recovery_sent_at: String?
    let email_change_sent_at: String?
    let reauthentication_sent_at: String?

    init(_ user: SessionUser, audience: String) {
        self.id = user.id.lowercasedString
        self.aud = audience
        self.role = "authenticated"
        self.email = user.email ?? ""
        self.phone = ""
        self.last_sign_in_at = user.lastSignInAt.map(RFC3339.format)
        self.app_metadata = user.appMetadata
        self.user_metadata = user.userMetadata
        self.identities = user.identities
        self.created_at = RFC3339.format(user.createdAt)
        self.updated_at = RFC3339.format(user.updatedAt)
        self.is_anonymous = user.isAnonymous
        let state = user.emailState.objectValue ?? [:]
        self.email_confirmed_at = state["email_confirmed_at"]?.stringValue
        self.confirmed_at = state["confirmed_at"]?.stringValue
        self.new_email = state["new_email"]?.stringValue
        self.confirmation_sent_at = state["confirmation_sent_at"]?.stringValue
        self.recovery_sent_at = state["recovery_sent_at"]?.stringValue
        self.email_change_sent_at = state["email_change_sent_at"]?.stringValue
        self.reauthentication_sent_at = state["reauthentication_sent_at"]?.stringValue
    }
}

/// GoTrue's `AccessTokenResponse`: a session.
struct SessionResponse: Encodable {
    let access_token: String
    let token_type = "bearer"
    let expires_in: Int
    let expires_at: Int
    let refresh_token: String
    let user: UserResponse
    /// After a recovery-code sign-in: the code is spent, and the app should have the user make a new one.
    var recovery_code_used: Bool? = nil
}
