import Foundation
import GuestPassCrypto
import GuestPassJSON
import GuestPassPostgres
import GuestPassStore
import Hummingbird

/// Proving an address and signing in by email: `POST /auth/v1/verify` (`verifyOTP`: a code, or `token_hash`),
/// `GET /auth/v1/verify` (the mailed link: a 303 to `redirect_to` with the session in the fragment, or `?code=` under
/// PKCE), `POST /token?grant_type=password` and `grant_type=pkce`.
extension AuthRoutes {
    // MARK: POST /auth/v1/verify

    func verify(_ request: Request, _ context: CallerContext) async throws -> Response {
        var request = request
        let caller = context.caller
        let body = try await request.jsonObject(limit: BodyLimits.token)
        guard let type = body["type"]?.stringValue else { throw APIError.validation("type is required") }
        if ["sms", "phone_change"].contains(type) {
            throw APIError(.badRequest, code: GoTrueCode.providerDisabled, message: "Phone logins are disabled")
        }
        guard Self.verifyTypes.contains(type) else {
            throw APIError.validation("type must be signup, invite, magiclink, recovery, email_change or email")
        }
        let hasToken = body["token"] != nil && body["token"] != .null
        let hasHash = body["token_hash"] != nil && body["token_hash"] != .null
        guard hasToken != hasHash else { throw APIError.validation("Verify requires either a token or a token hash") }
        let verification: ServerFunctions.Verification
        if hasHash {
            guard let hash = body["token_hash"]?.stringValue, !hash.isEmpty, hash.utf8.count <= 128 else {
                throw APIError.validation("token_hash must be a string")
            }
            verification = .link(linkHash: EmailCodeIssuer.linkHash(hash), followed: false)
        } else {
            let address: String
            do {
                address = try EmailInput.address(body)
            } catch {
                throw APIError(.unprocessableContent, code: GoTrueCode.validationFailed, message: "Invalid email format")
            }
            let code = try EmailInput.code(body["token"])
            verification = .code(email: address, codeHash: self.email.codes.codeHash(code, app: caller.appID))
        }
        let sessionID = UUID()
        let refreshToken = self.tokens.refreshToken(session: sessionID, counter: 0)
        let outcome = try await self.functions.emailVerify(
            type: type, verification, redirectTo: nil, sessionID: sessionID, refreshTokenHash: Digest.sha256Hex(refreshToken),
            userAgent: request.headers[.userAgent],
            bucket: self.email.verifyBucket, as: caller.anonIdentity
        )
        switch outcome.status {
        case .verified:
            return try self.emailSession(outcome, caller: caller, sessionID: sessionID, refreshToken: refreshToken, request, context)
        case .partial:
            // A secure change with the other address still to confirm: a bare User (both SDKs decode it; GoTrue's
            // {"msg", "code": "200"} breaks supabase-swift).
            return try self.bareUser(outcome, caller: caller).response(from: request, context: context)
        default:
            throw Self.emailRefusal(outcome)
        }
    }

    /// The `/verify` types of email codes (`guestpass.email_code_purposes`).
    static let verifyTypes: Set<String> = ["signup", "invite", "magiclink", "recovery", "email_change", "email"]

    // MARK: GET /auth/v1/verify?token=…&type=…&redirect_to=…&app=…

    /// The mailed link. Opened in a browser, it carries no API key: its `app` names the app (a wrong one finds no link).
    /// Answers 303 to `redirect_to` (when the app allows it, else its site URL): the session in the fragment, or under
    /// PKCE `?code=`; a refused link `#error=access_denied&error_code=otp_expired…`.
    func verifyLink(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        guard let token = try EmailInput.queryValue(request, "token", limit: 128), let type = try EmailInput.queryValue(request, "type", limit: 32),
            let app = try EmailInput.queryValue(request, "app", limit: 36).flatMap(UUID.init(uuidString:))
        else { throw APIError.validation("token, type and app are required") }
        guard Self.verifyTypes.contains(type) else {
            throw APIError.validation("type must be signup, invite, magiclink, recovery, email_change or email")
        }
        let redirectTo = try EmailInput.redirectTo(request)
        let identity = RequestIdentity.apiKey(
            .anon, app: app, clientAddress: request.clientIP(context: context, trustedHeader: self.configuration.trustedProxyHeader))
        let sessionID = UUID()
        let refreshToken = self.tokens.refreshToken(session: sessionID, counter: 0)
        let authCode = UUID().lowercasedString
        let outcome = try await self.functions.emailVerify(
            type: type, .link(linkHash: EmailCodeIssuer.linkHash(token), followed: true), redirectTo: redirectTo, sessionID: sessionID,
            refreshTokenHash: Digest.sha256Hex(refreshToken), authCodeHash: EmailCodeIssuer.linkHash(authCode),
            userAgent: request.headers[.userAgent], bucket: self.email.verifyBucket, as: identity
        )
        let target = outcome.redirectTo ?? ""
        switch outcome.status {
        case .verified:
            guard let row = outcome.user else { throw APIError.unexpected }
            var user = try SessionUser(
                row: row, appID: app, sessionID: sessionID, deviceID: try row.decode(UUID?.self, "device_id"),
                lastSignInAt: try row.decode(Date?.self, "last_sign_in_at"))
            user.authenticationMethod = outcome.authenticationMethod
            let access = try self.tokens.issueAccessToken(for: user)
            return Self.redirect(
                target,
                fragment: [
                    ("access_token", access.token), ("expires_at", "\(access.expiresAt)"),
                    ("expires_in", "\(self.configuration.accessTokenLifetime)"), ("refresh_token", refreshToken), ("token_type", "bearer"),
                    ("type", type), ("sb", ""),
                ])
        case .pkce:
            return Self.redirect(target, query: [("code", authCode)])
        case .partial:
            return Self.redirect(
                target,
                fragment: [
                    ("message", "Confirmation link accepted. Please proceed to confirm link sent to the other email"), ("sb", ""),
                ])
        default:
            let error = Self.emailRefusal(outcome)
            return Self.redirect(
                target, fragment: [("error", "access_denied"), ("error_code", error.code), ("error_description", error.message), ("sb", "")])
        }
    }

    /// A 303 to `target` with `query` added to its query and `fragment` as its fragment (percent-encoded).
    static func redirect(_ target: String, query: [(String, String)] = [], fragment: [(String, String)] = []) -> Response {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        func encode(_ pairs: [(String, String)]) -> String {
            pairs.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
        }
        var location = target.isEmpty ? "/" : target
        if let hash = location.firstIndex(of: "#") { location = String(location[..<hash]) }
        if !query.isEmpty { location += (location.contains("?") ? "&" : "?") + encode(query) }
        if !fragment.isEmpty { location += "#" + encode(fragment) }
        return Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    // MARK: POST /auth/v1/token?grant_type=password

    /// `signIn(email:password:)`. The password is checked on the hashing pool; an unknown address costs the same time
    /// (a dummy hash), and every miss answers the same `invalid_credentials`.
    func signInWithPassword(_ body: [String: JSONValue], _ request: Request, _ context: CallerContext) async throws -> Response {
        let caller = context.caller
        if body["phone"] != nil && body["phone"] != .null && (body["email"] == nil || body["email"] == .null) {
            throw APIError(.badRequest, code: GoTrueCode.providerDisabled, message: "Phone logins are disabled")
        }
        let address: String
        do {
            address = try EmailInput.address(body)
        } catch {
            throw Self.invalidCredentials
        }
        guard let password = try EmailInput.password(body), !password.isEmpty else { throw Self.invalidCredentials }
        let lookup = try await self.functions.passwordLookup(email: address, bucket: self.email.passwordBucket, as: caller.anonIdentity)
        guard lookup.enabled else { throw Self.emailDisabled }
        guard let user = lookup.userID, let stored = lookup.passwordHash else {
            try await self.email.hasher.verifyDummy(password)
            throw Self.invalidCredentials
        }
        let rehash: String?
        switch try await self.email.hasher.verify(password, against: stored) {
        case .match(let needsRehash): rehash = needsRehash ? try await self.email.hasher.hash(password) : nil
        case .mismatch, .unsupported: throw Self.invalidCredentials
        }
        guard lookup.confirmed else {
            throw APIError(.badRequest, code: GoTrueCode.emailNotConfirmed, message: "Email not confirmed")
        }
        let sessionID = UUID()
        let refreshToken = self.tokens.refreshToken(session: sessionID, counter: 0)
        let outcome = try await self.functions.passwordSignIn(
            user: user, checkedHash: stored, rehash: rehash, sessionID: sessionID, refreshTokenHash: Digest.sha256Hex(refreshToken),
            userAgent: request.headers[.userAgent], as: caller.anonIdentity
        )
        guard outcome.status == .signedIn else { throw Self.emailRefusal(outcome) }
        return try self.emailSession(outcome, caller: caller, sessionID: sessionID, refreshToken: refreshToken, request, context)
    }

    // MARK: POST /auth/v1/token?grant_type=pkce {auth_code, code_verifier}

    func exchangeAuthCode(_ body: [String: JSONValue], _ request: Request, _ context: CallerContext) async throws -> Response {
        let caller = context.caller
        guard let code = body["auth_code"]?.stringValue, !code.isEmpty, code.utf8.count <= 128,
            let verifier = body["code_verifier"]?.stringValue, (43...128).contains(verifier.utf8.count)
        else { throw APIError.validation("invalid request: both auth code and code verifier should be non-empty") }
        let sessionID = UUID()
        let refreshToken = self.tokens.refreshToken(session: sessionID, counter: 0)
        let outcome = try await self.functions.exchangeAuthCode(
            codeHash: EmailCodeIssuer.linkHash(code.lowercased()), verifier: verifier,
            verifierS256: Base64URL.encode(Digest.sha256(Array(verifier.utf8))), sessionID: sessionID,
            refreshTokenHash: Digest.sha256Hex(refreshToken), userAgent: request.headers[.userAgent], as: caller.anonIdentity
        )
        guard outcome.status == .signedIn else { throw Self.emailRefusal(outcome) }
        return try self.emailSession(outcome, caller: caller, sessionID: sessionID, refreshToken: refreshToken, request, context)
    }
}
