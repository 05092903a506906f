import Foundation
import GuestPassCrypto
import GuestPassPostgres
import Hummingbird
import NIOFoundationEssentialsCompat
import GuestPassJSON
import GuestPassStore

/// The Supabase-compatible auth API under `/auth/v1`: anonymous sign-up, refresh, user, logout, settings, JWKS.
struct AuthRoutes: Sendable {
    let functions: ServerFunctions
    let authenticator: Authenticator
    let tokens: TokenService
    let apple: AppleVerifiers
    let email: EmailServices
    var configuration: AuthConfiguration { self.tokens.configuration }

    func register(on router: Router<AppRequestContext>) {
        let auth = router.group("auth/v1").add(middleware: ErrorMiddleware(dialect: .goTrue))
        let keyed = auth.group().add(middleware: AuthenticationMiddleware(authenticator: self.authenticator))
        keyed.group(context: CallerContext.self)
            .post("signup") { request, context in try await self.signUp(request, context) }
            .post("token") { request, context in try await self.token(request, context) }
        // GoTrue's public email endpoints: the API key alone (a stale bearer token is neither used nor refused).
        auth.group().add(middleware: AuthenticationMiddleware(authenticator: self.authenticator, ignoresBearer: true))
            .group(context: CallerContext.self)
            .post("otp") { request, context in try await self.otp(request, context) }
            .post("recover") { request, context in try await self.recover(request, context) }
            .post("resend") { request, context in try await self.resend(request, context) }
            .post("verify") { request, context in try await self.verify(request, context) }
        auth.get("verify") { request, context in try await self.verifyLink(request, context) }
        keyed.group(context: SignedInContext.self)
            .get("reauthenticate") { request, context in try await self.reauthenticate(request, context) }
            .get("user") { _, context in try await self.user(context) }
            .put("user") { request, context in try await self.updateUser(request, context) }
            .post("logout") { request, context in try await self.logout(request, context) }
        auth.get("settings") { _, _ in Settings() }
        auth.get(".well-known/jwks.json") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json", .cacheControl: "public, max-age=600"],
                body: .init(byteBuffer: ByteBuffer(data: try self.tokens.keySet.jsonData()))
            )
        }
    }

    // MARK: POST /auth/v1/signup

    func signUp(_ request: Request, _ context: CallerContext) async throws -> Response {
        var request = request
        let caller = context.caller
        let body = try await request.jsonObject(limit: BodyLimits.signUp)
        if body["phone"] != nil && body["phone"] != .null {
            throw APIError(.badRequest, code: GoTrueCode.providerDisabled, message: "Phone signups are disabled")
        }
        // Checked whatever the form: a value the route documents is refused alike whether or not it is used.
        _ = try EmailInput.redirectTo(request)
        if body["email"] != nil && body["email"] != .null { return try await self.signUpWithEmail(body, request, context) }
        let signup = try GuestSignup(data: body["data"])
        let sessionID = UUID()
        let refreshToken = self.tokens.refreshToken(session: sessionID, counter: 0)
        if let redemption = signup.accountCode {
            return try await self.redeem(redemption, signup, request, context, sessionID: sessionID, refreshToken: refreshToken)
        }
        let row: PostgresRow
        do {
            row = try await self.functions.signUpGuest(
                deviceSecretHash: signup.deviceSecretHash, device: signup.device, userMetadata: signup.userMetadata,
                limits: SignUpLimits(self.configuration), userAgent: request.headers[.userAgent], sessionID: sessionID,
                refreshTokenHash: Digest.sha256Hex(refreshToken), as: caller.anonIdentity
            )
        } catch let error as PostgresError where error.sqlState == .deviceRevoked {
            throw Self.deviceRevoked
        }
        let user = try SessionUser(
            row: row, appID: caller.appID, sessionID: sessionID, deviceID: try row.decode(UUID?.self, "device_id"),
            lastSignInAt: try row.decode(Date?.self, "last_sign_in_at")
        )
        ServiceMetrics.signUp(try row.decode(Bool.self, "created") ? "created" : "existing")
        return try self.sessionResponse(user: user, refreshToken: refreshToken, request: request, context: context)
    }

    static let deviceRevoked = APIError.unauthorized(GoTrueCode.deviceRevoked, "This device was revoked; sign in another way")

    /// Sign-up with `data.transfer_code` or `data.recovery_code`: the new phone (its own `data.device_id`) joins the
    /// code's account as a new device. A used, expired, wrong or unknown code is the same 400 (no oracle).
    func redeem(
        _ redemption: GuestSignup.AccountCodeRedemption, _ signup: GuestSignup, _ request: Request, _ context: CallerContext, sessionID: UUID,
        refreshToken: String
    ) async throws -> Response {
        guard let secretHash = signup.deviceSecretHash else {
            throw APIError.validation("data.device_id (the new phone's own secret) is required with a code")
        }
        let kind: AccountCode.Kind = redemption.kind
        let outcome: RedeemOutcome
        if let codeHash = AccountCode.hash(redemption.code) {
            outcome = try await self.functions.redeemAccountCode(
                kind, codeHash: codeHash, device: signup.device, deviceSecretHash: secretHash, userAgent: request.headers[.userAgent],
                sessionID: sessionID, refreshTokenHash: Digest.sha256Hex(refreshToken), as: context.caller.anonIdentity
            )
        } else {
            outcome = .invalidCode
        }
        switch outcome {
        case .redeemed(let row, let kind):
            ServiceMetrics.signUp(kind.rawValue)
            let user = try SessionUser(
                row: row, appID: context.caller.appID, sessionID: sessionID, deviceID: try row.decode(UUID?.self, "device_id"),
                lastSignInAt: try row.decode(Date?.self, "last_sign_in_at")
            )
            return try self.sessionResponse(
                user: user, refreshToken: refreshToken, request: request, context: context, recoveryCodeUsed: kind == .recovery
            )
        case .invalidCode:
            throw APIError(
                .badRequest, code: kind == .transfer ? GoTrueCode.invalidTransferCode : GoTrueCode.invalidRecoveryCode,
                message: "The code is not valid (used, expired or wrong)")
        case .deviceInUse:
            throw APIError(.unprocessableContent, code: GoTrueCode.deviceInUse, message: "This device id belongs to another account")
        }
    }

    // MARK: POST /auth/v1/token?grant_type=refresh_token|id_token

    func token(_ request: Request, _ context: CallerContext) async throws -> Response {
        var request = request
        switch request.uri.queryParameters["grant_type"].map(String.init) {
        case "refresh_token":
            let body = try await request.jsonObject(limit: BodyLimits.token)
            return try await self.refresh(body, request, context)
        case "id_token":
            let body = try await request.jsonObject(limit: BodyLimits.token)
            return try await self.signInWithIDToken(body, request, context)
        case "password":
            let body = try await request.jsonObject(limit: BodyLimits.token)
            return try await self.signInWithPassword(body, request, context)
        case "pkce":
            let body = try await request.jsonObject(limit: BodyLimits.token)
            return try await self.exchangeAuthCode(body, request, context)
        default:
            throw APIError(
                .badRequest, code: GoTrueCode.unsupportedGrantType, message: "grant_type must be refresh_token, id_token, password or pkce")
        }
    }

    func refresh(_ body: [String: JSONValue], _ request: Request, _ context: CallerContext) async throws -> Response {
        let caller = context.caller
        guard let presented = body["refresh_token"]?.stringValue, !presented.isEmpty else {
            throw APIError.validation("refresh_token is required")
        }
        guard let parsed = self.tokens.parseRefreshToken(presented) else { throw Self.refreshTokenNotFound }
        let next = self.tokens.refreshToken(session: parsed.session, counter: parsed.counter + 1)
        let outcome = try await self.functions.refreshSession(
            session: parsed.session, counter: parsed.counter, presentedHash: Digest.sha256Hex(presented), nextHash: Digest.sha256Hex(next),
            reuseWindow: self.configuration.refreshReuseWindow, as: caller.anonIdentity
        )
        ServiceMetrics.refresh(
            {
                switch outcome {
                case .active: "rotated"
                case .alreadyUsed: "already_used"
                case .sessionNotFound: GoTrueCode.sessionNotFound
                case .tokenNotFound: "token_not_found"
                }
            }())
        switch outcome {
        case .active(let row, let active):
            let user = try SessionUser(
                row: row, appID: caller.appID, sessionID: parsed.session, deviceID: try row.decode(UUID?.self, "device_id"),
                lastSignInAt: nil
            )
            // Usually the token just issued; an older one handed back within the reuse window gets the active one.
            let refreshToken = active == parsed.counter + 1 ? next : self.tokens.refreshToken(session: parsed.session, counter: active)
            return try self.sessionResponse(user: user, refreshToken: refreshToken, request: request, context: context)
        case .alreadyUsed:
            throw APIError(.badRequest, code: GoTrueCode.refreshTokenAlreadyUsed, message: "Invalid Refresh Token: Already Used")
        case .sessionNotFound:
            throw APIError(.badRequest, code: GoTrueCode.sessionNotFound, message: "Session not found or revoked")
        case .tokenNotFound:
            throw Self.refreshTokenNotFound
        }
    }

    static let refreshTokenNotFound = APIError(
        .badRequest, code: GoTrueCode.refreshTokenNotFound, message: "Invalid Refresh Token: Refresh Token Not Found"
    )

    // MARK: GET /auth/v1/user

    func user(_ context: SignedInContext) async throws -> UserResponse {
        let (caller, token) = (context.caller, context.token)
        guard let profile = try await self.functions.currentUserProfile(as: caller.identity) else {
            throw APIError(.forbidden, code: GoTrueCode.sessionNotFound, message: "Session from session_id claim in JWT does not exist")
        }
        var user = try SessionUser(
            row: profile.row, appID: caller.appID, sessionID: token.sessionID, deviceID: token.deviceID, lastSignInAt: nil,
            withIdentities: true
        )
        user.emailState = profile.emailState
        return UserResponse(user, audience: self.configuration.audience)
    }

    // MARK: PUT /auth/v1/user {data, email, password, nonce}

    /// Updates the caller: `email` and `password` first (`updateCredentials`: a code to a new address, a password set
    /// or changed), then `data` (`guestpass_server.update_user`: the name asked once, timezone, language, flags,
    /// avatar, other keys into user_metadata). Answers the user (a bare User, as GoTrue). A phone is not offered.
    func updateUser(_ request: Request, _ context: SignedInContext) async throws -> UserResponse {
        var request = request
        let (caller, token) = (context.caller, context.token)
        let body = try await request.jsonObject(limit: BodyLimits.signUp)
        if body["phone"] != nil && body["phone"] != .null {
            throw APIError(.unprocessableContent, code: GoTrueCode.phoneChangeDisabled, message: "Phone numbers are not offered")
        }
        let data = try EmailInput.object(body["data"], "data")
        _ = try EmailInput.redirectTo(request)
        try await self.updateCredentials(body, request, context)
        let profile: ServerFunctions.Profile?
        if let data {
            profile = try await self.functions.updateUser(data: data, as: caller.identity)
        } else {
            profile = try await self.functions.currentUserProfile(as: caller.identity)
        }
        guard let profile else {
            throw APIError(.forbidden, code: GoTrueCode.sessionNotFound, message: "Session from session_id claim in JWT does not exist")
        }
        var user = try SessionUser(
            row: profile.row, appID: caller.appID, sessionID: token.sessionID, deviceID: token.deviceID, lastSignInAt: nil,
            withIdentities: true
        )
        user.emailState = profile.emailState
        return UserResponse(user, audience: self.configuration.audience)
    }

    // MARK: POST /auth/v1/logout?scope=global|local|others

    func logout(_ request: Request, _ context: SignedInContext) async throws -> Response {
        guard let scope = ServerFunctions.SignOutScope(rawValue: request.uri.queryParameters["scope"].map(String.init) ?? "global") else {
            throw APIError.validation("scope must be global, local or others")
        }
        try await self.functions.signOut(scope, as: context.caller.identity)
        return Response(status: .noContent)
    }

    // MARK: Helpers

    func sessionResponse(
        user: SessionUser, refreshToken: String, request: Request, context: CallerContext, recoveryCodeUsed: Bool = false
    ) throws -> Response {
        let access = try self.tokens.issueAccessToken(for: user)
        let body = SessionResponse(
            access_token: access.token, expires_in: self.configuration.accessTokenLifetime, expires_at: access.expiresAt,
            refresh_token: refreshToken, user: UserResponse(user, audience: self.configuration.audience),
            recovery_code_used: recoveryCodeUsed ? true : nil
        )
        return try body.response(from: request, context: context)
    }

    struct Settings: ResponseEncodable {
        struct External: Encodable {
            let anonymous_users = true
            let email = true
            let phone = false
            let apple = true
        }
        let external = External()
        let disable_signup = false
        let mailer_autoconfirm = false
        let phone_autoconfirm = false
        let sms_provider = ""
        let saml_enabled = false
    }
}

extension SessionResponse: ResponseEncodable {}
extension UserResponse: ResponseEncodable {}
