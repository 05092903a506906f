import Foundation
import GuestPassCrypto
import GuestPassPostgres
import Hummingbird

/// The Supabase-compatible auth API under `/auth/v1`: anonymous sign-up, refresh, user, logout, settings, JWKS.
struct AuthRoutes: Sendable {
    let pool: PostgresPool
    let authenticator: Authenticator
    let tokens: TokenService
    var configuration: AuthConfiguration { self.tokens.configuration }

    /// Sign-up bodies: `data` holds at most 16 KiB of metadata plus the device id and facts.
    static let signUpBodyLimit = 32 * 1024
    /// Token bodies: a refresh token.
    static let tokenBodyLimit = 4 * 1024

    func register(on router: Router<AppRequestContext>) {
        let auth = router.group("auth/v1").add(middleware: ErrorMiddleware(dialect: .goTrue))
        let keyed = auth.group().add(middleware: AuthenticationMiddleware(authenticator: self.authenticator))
        keyed.group(context: CallerContext.self)
            .post("signup") { request, context in try await self.signUp(request, context) }
            .post("token") { request, context in try await self.token(request, context) }
        keyed.group(context: SignedInContext.self)
            .get("user") { _, context in try await self.user(context) }
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
        let body = try await request.jsonObject(limit: Self.signUpBodyLimit)
        if body["email"] != nil || body["phone"] != nil {
            throw APIError(.unprocessableContent, code: "email_provider_disabled", message: "Only anonymous sign-up is available")
        }
        let signup = try GuestSignup(data: body["data"])
        let sessionID = UUID()
        let refreshToken = self.tokens.refreshToken(session: sessionID, counter: 0)
        let ip = caller.clientAddress
        let statement = PostgresStatement(
            """
            SELECT * FROM guestpass_server.sign_up_guest($1, $2::jsonb, $3::jsonb, $4, $5, $6, $7, $8, $9, $10, $11)
            """,
            [
                signup.deviceSecretHash, signup.device.map { PostgresJSON(text: JSONValue.object($0).jsonText) },
                PostgresJSON(text: JSONValue.object(signup.userMetadata).jsonText), ip,
                Int32(self.configuration.signupBurstPerIP), self.configuration.signupsPerHourPerIP / 3600,
                Int32(self.configuration.signupBurstPerApp), self.configuration.signupsPerHourPerApp / 3600,
                request.headers[.userAgent].map { String($0.prefix(512)) }, sessionID, Digest.sha256Hex(refreshToken),
            ],
            reusesPlan: true
        )
        guard let row = try await self.pool.requestTransaction(caller.anonIdentity, [statement]).first?.first else { throw APIError.unexpected }
        let user = try SessionUser(
            row: row, appID: caller.appID, sessionID: sessionID, deviceID: try row.decode(UUID?.self, "device_id"),
            lastSignInAt: try row.decode(Date?.self, "last_sign_in_at")
        )
        return try self.sessionResponse(user: user, refreshToken: refreshToken, request: request, context: context)
    }

    // MARK: POST /auth/v1/token?grant_type=refresh_token

    func token(_ request: Request, _ context: CallerContext) async throws -> Response {
        var request = request
        let caller = context.caller
        let grantType = request.uri.queryParameters["grant_type"].map(String.init)
        guard grantType == "refresh_token" else {
            throw APIError(.badRequest, code: "unsupported_grant_type", message: "grant_type must be refresh_token")
        }
        let body = try await request.jsonObject(limit: Self.tokenBodyLimit)
        guard let presented = body["refresh_token"]?.stringValue, !presented.isEmpty else {
            throw APIError.validation("refresh_token is required")
        }
        guard let parsed = self.tokens.parseRefreshToken(presented) else { throw Self.refreshTokenNotFound }
        let next = self.tokens.refreshToken(session: parsed.session, counter: parsed.counter + 1)
        let results = try await self.pool.requestTransaction(
            caller.anonIdentity,
            [
                PostgresStatement(
                    "SELECT * FROM guestpass_server.refresh_session($1, $2, $3, $4, $5)",
                    [parsed.session, Int32(parsed.counter), Digest.sha256Hex(presented), Digest.sha256Hex(next), self.configuration.refreshReuseWindow],
                    reusesPlan: true
                )
            ]
        )
        guard let row = results.first?.first else { throw Self.refreshTokenNotFound }
        switch try row.decode(String.self, "status") {
        case "rotated", "reused":
            let active = try row.decode(Int.self, "active_counter")
            let user = try SessionUser(
                row: row, appID: caller.appID, sessionID: parsed.session, deviceID: try row.decode(UUID?.self, "device_id"),
                lastSignInAt: nil
            )
            return try self.sessionResponse(
                user: user, refreshToken: self.tokens.refreshToken(session: parsed.session, counter: active), request: request,
                context: context
            )
        case "refresh_token_already_used":
            throw APIError(.badRequest, code: "refresh_token_already_used", message: "Invalid Refresh Token: Already Used")
        case "session_not_found":
            throw APIError(.badRequest, code: "session_not_found", message: "Session not found or revoked")
        default:
            throw Self.refreshTokenNotFound
        }
    }

    static let refreshTokenNotFound = APIError(
        .badRequest, code: "refresh_token_not_found", message: "Invalid Refresh Token: Refresh Token Not Found"
    )

    // MARK: GET /auth/v1/user

    func user(_ context: SignedInContext) async throws -> UserResponse {
        let (caller, token) = (context.caller, context.token)
        let results = try await self.pool.requestTransaction(
            caller.identity, readOnly: true, [PostgresStatement("SELECT * FROM guestpass_server.current_user_profile()", reusesPlan: true)]
        )
        guard let row = results.first?.first, try row.decode(Bool.self, "session_active") else {
            throw APIError(.forbidden, code: "session_not_found", message: "Session from session_id claim in JWT does not exist")
        }
        let user = try SessionUser(row: row, appID: caller.appID, sessionID: token.sessionID, deviceID: token.deviceID, lastSignInAt: nil)
        return UserResponse(user, audience: self.configuration.audience)
    }

    // MARK: POST /auth/v1/logout?scope=global|local|others

    func logout(_ request: Request, _ context: SignedInContext) async throws -> Response {
        let scope = request.uri.queryParameters["scope"].map(String.init) ?? "global"
        guard ["global", "local", "others"].contains(scope) else {
            throw APIError.validation("scope must be global, local or others")
        }
        let caller = context.caller
        _ = try await self.pool.requestTransaction(
            caller.identity, [PostgresStatement("SELECT guestpass_server.sign_out($1)", [scope])]
        )
        return Response(status: .noContent)
    }

    // MARK: Helpers

    private func sessionResponse(user: SessionUser, refreshToken: String, request: Request, context: CallerContext) throws -> Response {
        let access = try self.tokens.issueAccessToken(for: user)
        let body = SessionResponse(
            access_token: access.token, expires_in: self.configuration.accessTokenLifetime, expires_at: access.expiresAt,
            refresh_token: refreshToken, user: UserResponse(user, audience: self.configuration.audience)
        )
        return try body.response(from: request, context: context)
    }

    struct Settings: ResponseEncodable {
        struct External: Encodable {
            let anonymous_users = true
            let email = false
            let phone = false
            let apple = false
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
