import Foundation
import GuestPassCrypto
import GuestPassJSON
import GuestPassPostgres
import GuestPassStore
import Hummingbird

/// Email sign-up and the requests that mail a code: `POST /auth/v1/signup {email, password}`, `/otp`, `/recover`,
/// `/resend`. The SQL of each is one `guestpass_server.email_*` function (repeatable/14_email.sql); the server draws
/// the code and hashes the password first (`EmailCodeIssuer`, `PasswordHasher`).
extension AuthRoutes {
    /// The app's email settings, or 400 `email_provider_disabled` when it offers no email.
    func emailSettings(_ caller: Caller) async throws -> EmailSettings {
        guard let settings = try await self.functions.emailSettings(as: caller.anonIdentity), settings.enabled else {
            throw Self.emailDisabled
        }
        return settings
    }

    static let emailDisabled = APIError(.badRequest, code: GoTrueCode.emailProviderDisabled, message: "Email logins are disabled")

    // MARK: POST /auth/v1/signup {email, password, data?}

    func signUpWithEmail(_ body: [String: JSONValue], _ request: Request, _ context: CallerContext) async throws -> Response {
        let caller = context.caller
        let address = try EmailInput.address(body)
        guard let password = try EmailInput.password(body), !password.isEmpty else {
            throw APIError.validation("Signup requires a valid password")
        }
        let data = EmailInput.withoutDeviceKeys(try EmailInput.object(body["data"], "data") ?? [:])
        let pkce = try EmailInput.pkce(body)
        let redirectTo = try EmailInput.redirectTo(request)
        let settings = try await self.emailSettings(caller)
        try EmailInput.checkStrength(password, settings)
        let hash = try await self.email.hasher.hash(password)
        let mail = try self.email.codes.issue(length: settings.otpLength, app: caller.appID)
        let sessionID = UUID()
        let refreshToken = self.tokens.refreshToken(session: sessionID, counter: 0)
        let outcome = try await self.functions.emailSignUp(
            email: address, passwordHash: hash, data: data, mail: mail, pkce: pkce, redirectTo: redirectTo, sessionID: sessionID,
            refreshTokenHash: Digest.sha256Hex(refreshToken), userAgent: request.headers[.userAgent], bucket: self.email.sendBucket,
            as: caller.anonIdentity
        )
        switch outcome.status {
        case .signedIn:
            return try self.emailSession(outcome, caller: caller, sessionID: sessionID, refreshToken: refreshToken, request, context)
        case .pending:
            return try self.bareUser(outcome, caller: caller).response(from: request, context: context)
        case .exists:
            // As GoTrue: a made-up user, so a sign-up does not tell whether the address has an account.
            return try FabricatedUser(email: address, data: data, audience: self.configuration.audience)
                .response(from: request, context: context)
        default:
            throw Self.emailRefusal(outcome)
        }
    }

    // MARK: POST /auth/v1/otp, /recover, /resend

    /// `signInWithOTP(email:shouldCreateUser:data:)`: a code and magic link (a sign-up confirmation for a new address).
    func otp(_ request: Request, _ context: CallerContext) async throws -> Response {
        var request = request
        let body = try await request.jsonObject(limit: BodyLimits.signUp)
        if body["phone"] != nil && body["phone"] != .null && (body["email"] == nil || body["email"] == .null) {
            throw APIError(.badRequest, code: GoTrueCode.providerDisabled, message: "Phone logins are disabled")
        }
        let createUser: Bool
        switch body["create_user"] {
        case nil, .null?: createUser = true
        case .bool(let value)?: createUser = value
        default: throw APIError.validation("create_user must be a boolean")
        }
        return try await self.sendCode(
            .otp, body, request, context, createUser: createUser,
            data: try EmailInput.object(body["data"], "data").map(EmailInput.withoutDeviceKeys))
    }

    /// `resetPasswordForEmail`: a recovery code; an unknown address answers the same.
    func recover(_ request: Request, _ context: CallerContext) async throws -> Response {
        var request = request
        let body = try await request.jsonObject(limit: BodyLimits.token)
        return try await self.sendCode(.recover, body, request, context)
    }

    /// `resend(email:type:)`: the sign-up confirmation or the pending change's code again.
    func resend(_ request: Request, _ context: CallerContext) async throws -> Response {
        var request = request
        let body = try await request.jsonObject(limit: BodyLimits.token)
        let kind: ServerFunctions.CodeRequest
        switch body["type"]?.stringValue {
        case "signup": kind = .resendSignup
        case "email_change": kind = .resendEmailChange
        case "sms", "phone_change": throw APIError(.badRequest, code: GoTrueCode.providerDisabled, message: "Phone logins are disabled")
        default: throw APIError.validation("type must be signup or email_change")
        }
        return try await self.sendCode(kind, body, request, context)
    }

    private func sendCode(
        _ kind: ServerFunctions.CodeRequest, _ body: [String: JSONValue], _ request: Request, _ context: CallerContext,
        createUser: Bool = false, data: [String: JSONValue]? = nil
    ) async throws -> Response {
        let caller = context.caller
        let address = try EmailInput.address(body)
        let pkce = try EmailInput.pkce(body)
        let redirectTo = try EmailInput.redirectTo(request)
        let settings = try await self.emailSettings(caller)
        let mail = try self.email.codes.issue(length: settings.otpLength, app: caller.appID)
        let outcome = try await self.functions.emailSendCode(
            kind, email: address, createUser: createUser, data: data, mail: mail, pkce: pkce, redirectTo: redirectTo,
            bucket: self.email.sendBucket, as: caller.anonIdentity
        )
        switch outcome.status {
        case .sent, .silent: return try EmptyObject().response(from: request, context: context)
        default: throw Self.emailRefusal(outcome)
        }
    }

    // MARK: Answers

    /// The session an email function opened (`outcome.user`), with its authentication method in `amr`.
    func emailSession(
        _ outcome: EmailOutcome, caller: Caller, sessionID: UUID, refreshToken: String, _ request: Request, _ context: CallerContext
    ) throws -> Response {
        guard let row = outcome.user else { throw APIError.unexpected }
        let user = try SessionUser(
            row: row, appID: caller.appID, sessionID: sessionID, deviceID: try row.decode(UUID?.self, "device_id"),
            lastSignInAt: try row.decode(Date?.self, "last_sign_in_at"), withIdentities: true
        )
        return try self.sessionResponse(user: user, refreshToken: refreshToken, request: request, context: context)
    }

    /// A bare GoTrue User of `outcome.user` (no session).
    func bareUser(_ outcome: EmailOutcome, caller: Caller, sessionID: UUID? = nil) throws -> UserResponse {
        guard let row = outcome.user else { throw APIError.unexpected }
        let user = try SessionUser(
            row: row, appID: caller.appID, sessionID: sessionID ?? UUID(), deviceID: nil, lastSignInAt: nil, withIdentities: true)
        return UserResponse(user, audience: self.configuration.audience)
    }

    /// GoTrue's answer for a status that refuses.
    static func emailRefusal(_ outcome: EmailOutcome) -> APIError {
        switch outcome.status {
        case .emailProviderDisabled: return Self.emailDisabled
        case .userAlreadyExists: return APIError(.unprocessableContent, code: GoTrueCode.userAlreadyExists, message: "User already registered")
        case .emailExists:
            return APIError(
                .unprocessableContent, code: GoTrueCode.emailExists, message: "A user with this email address has already been registered")
        case .otpDisabled: return APIError(.unprocessableContent, code: GoTrueCode.otpDisabled, message: "Signups not allowed for otp")
        case .overEmailSendRateLimit:
            let seconds = max(1, Int((outcome.waitSeconds ?? 60).rounded(.up)))
            return APIError(
                .tooManyRequests, code: GoTrueCode.overEmailSendRateLimit,
                message: "For security purposes, you can only request this after \(seconds) seconds.", headers: [.retryAfter: "\(seconds)"])
        case .otpExpired: return APIError(.forbidden, code: GoTrueCode.otpExpired, message: "Token has expired or is invalid")
        case .invalidCredentials: return Self.invalidCredentials
        case .sessionNotFound:
            return APIError(.forbidden, code: GoTrueCode.sessionNotFound, message: "Session from session_id claim in JWT does not exist")
        case .noAddress:
            return APIError(
                .unprocessableContent, code: GoTrueCode.validationFailed,
                message: "Updating password of an anonymous user without an email or phone is not allowed")
        case .emailNotConfirmed: return APIError(.unprocessableContent, code: GoTrueCode.emailNotConfirmed, message: "Email not confirmed")
        case .reauthenticationNeeded:
            return APIError(.badRequest, code: GoTrueCode.reauthenticationNeeded, message: "Password update requires reauthentication.")
        case .reauthenticationNotValid:
            return APIError(.unprocessableContent, code: GoTrueCode.reauthenticationNotValid, message: "Nonce has expired or is invalid")
        case .flowStateNotFound:
            return APIError(.notFound, code: GoTrueCode.flowStateNotFound, message: "invalid flow state, no valid flow state found")
        case .badCodeVerifier:
            return APIError(
                .forbidden, code: GoTrueCode.badCodeVerifier, message: "code challenge does not match previously saved code verifier")
        default: return .unexpected
        }
    }

    static let invalidCredentials = APIError(.badRequest, code: GoTrueCode.invalidCredentials, message: "Invalid login credentials")
}

/// `{}`: what `/otp`, `/recover`, `/resend` and `/reauthenticate` answer.
struct EmptyObject: ResponseEncodable {}

/// GoTrue's answer to a sign-up with a confirmed address when confirmations are on: a user that does not exist (a
/// random id, no identities, the request's data), so the answer does not tell that the address has an account beyond
/// what GoTrue's tells (`identities` empty). Its other fields look like a real pending user's: `confirmation_sent_at`
/// equal to `created_at` (one transaction's time), to the microsecond, and the app_metadata a new account gets.
struct FabricatedUser: ResponseEncodable {
    let id = UUID().lowercasedString
    let aud: String
    let role = "authenticated"
    let email: String
    let phone = ""
    let confirmation_sent_at: String
    let app_metadata: JSONValue = .object([
        "needs_account_setup": .bool(true), "provider": .string("email"), "providers": .array([.string("email")]),
    ])
    let user_metadata: JSONValue
    let identities: [JSONValue] = []
    let created_at: String
    let updated_at: String
    let is_anonymous = false

    init(email: String, data: [String: JSONValue], audience: String) {
        let now = Date()
        self.aud = audience
        self.email = email
        self.user_metadata = .object(data)
        self.created_at = RFC3339.format(now)
        self.confirmation_sent_at = self.created_at
        self.updated_at = self.created_at
    }
}
