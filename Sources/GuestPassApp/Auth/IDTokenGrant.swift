import Foundation
import GuestPassApple
import GuestPassCrypto
import Hummingbird
import GuestPassPostgres
import Logging
import GuestPassJSON
import GuestPassStore

extension AuthRoutes {
    // MARK: POST /auth/v1/token?grant_type=id_token

    /// Sign in with Apple, GoTrue's `id_token` grant: `{provider: "apple", id_token, nonce?, link_identity?}`.
    ///
    /// Without `link_identity` it signs in the app's user with that Apple id, creating it on first sign-in. With
    /// `link_identity: true` and a signed-in caller's bearer token it links the Apple id to the caller (a guest keeps its
    /// id and every row), ends the caller's session and answers a new one. Every refusal of the token is a 401 and
    /// nothing is created; Apple's keys unreachable with nothing cached is a 503.
    func signInWithIDToken(_ body: [String: JSONValue], _ request: Request, _ context: CallerContext) async throws -> Response {
        let caller = context.caller
        guard let provider = body["provider"]?.stringValue else { throw APIError.validation("provider is required") }
        guard provider == "apple" else {
            throw APIError(.badRequest, code: GoTrueCode.providerDisabled, message: "Only the apple provider is available for id_token")
        }
        guard let idToken = body["id_token"]?.stringValue, !idToken.isEmpty else { throw APIError.validation("id_token is required") }
        let nonce = try Self.optionalString(body["nonce"], "nonce")
        let authorizationCode = try Self.optionalString(body["authorization_code"], "authorization_code")
        let link: Bool
        switch body["link_identity"] {
        case nil, .null?: link = false
        case .bool(let value)?: link = value
        default: throw APIError.validation("link_identity must be a boolean")
        }
        if link && caller.token == nil {
            throw APIError.unauthorized(GoTrueCode.noAuthorization, "Linking an identity requires the user's Bearer access token")
        }

        guard let settings = try await self.functions.appleSettings(as: caller.anonIdentity), !settings.audiences.isEmpty else {
            throw APIError(.badRequest, code: GoTrueCode.providerDisabled, message: "Sign in with Apple is not enabled for this app")
        }
        let apple: AppleIdentity
        do {
            apple = try await self.apple.verifier(baseURL: settings.baseURL).verify(idToken, audiences: settings.audiences, nonce: nonce)
        } catch let error as AppleSignInError {
            throw Self.refusal(error)
        }

        let sealedAppleToken = await self.exchangeAuthorizationCode(authorizationCode, for: apple, settings: settings, app: caller.appID)
        let sessionID = UUID()
        let refreshToken = self.tokens.refreshToken(session: sessionID, counter: 0)
        let outcome = try await self.functions.signInWithIdentity(
            subject: apple.subject, audience: apple.audience, email: apple.email, isPrivateEmail: apple.isPrivateEmail, link: link,
            userAgent: request.headers[.userAgent], sessionID: sessionID,
            refreshTokenHash: Digest.sha256Hex(refreshToken), appleRefreshToken: sealedAppleToken,
            as: link ? caller.identity : caller.anonIdentity
        )
        switch outcome {
        case .signedIn(let row):
            let user = try SessionUser(
                row: row, appID: caller.appID, sessionID: sessionID, deviceID: try row.decode(UUID?.self, "device_id"),
                lastSignInAt: try row.decode(Date?.self, "last_sign_in_at"), withIdentities: true
            )
            return try self.sessionResponse(user: user, refreshToken: refreshToken, request: request, context: context)
        case .identityAlreadyExists:
            throw APIError(
                .unprocessableContent, code: GoTrueCode.identityAlreadyExists, message: "Identity is already linked to another user"
            )
        case .sessionNotFound:
            throw APIError(.forbidden, code: GoTrueCode.sessionNotFound, message: "Session from session_id claim in JWT does not exist")
        }
    }

    /// Apple's refresh token for `code` (the app's `authorization_code`), sealed for storage, when the app configured its
    /// Sign in with Apple key; nil otherwise. A failed exchange is logged and the sign-in goes on (the identity token
    /// already proved the user), but that account cannot be revoked at Apple when deleted.
    func exchangeAuthorizationCode(_ code: String?, for apple: AppleIdentity, settings: AppleSettings, app: UUID) async -> [UInt8]? {
        guard let code, let key = settings.key else { return nil }
        do {
            let token = try await self.apple.authClient(key).exchange(code: code, clientID: apple.audience)
            return try AppleTokenSealer(signer: self.configuration.signer).seal(token, app: app, subject: apple.subject)
        } catch {
            self.apple.logger.warning("Apple authorization code exchange failed", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// The GoTrue error for a refused identity token: 401 for the token's faults, 503 when Apple's keys are out of reach.
    static func refusal(_ error: AppleSignInError) -> APIError {
        switch error.reason {
        case .keysUnavailable:
            APIError(
                .serviceUnavailable, code: GoTrueCode.providerUnavailable, message: "Apple's sign-in keys are unreachable; retry shortly",
                headers: [.retryAfter: "5"]
            )
        case .nonceMismatch, .nonceMissing:
            APIError.unauthorized(GoTrueCode.badOauthCallback, "Nonces mismatch")
        case .invalidToken, .unknownKey:
            APIError.unauthorized(GoTrueCode.badJwt, "Invalid Apple ID token")
        }
    }

    private static func optionalString(_ value: JSONValue?, _ name: String) throws -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)? where !text.isEmpty && text.utf8.count <= 1024: return text
        default: throw APIError.validation("\(name) must be a non-empty string of at most 1024 bytes")
        }
    }
}
