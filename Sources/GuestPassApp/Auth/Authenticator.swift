import Foundation
import GuestPassCrypto
import GuestPassPostgres
import HTTPTypes
import Hummingbird

/// Who is calling: the app of the API key and, when a valid access token was sent, the signed-in user.
struct Caller: Sendable {
    let grant: APIKeyGrant
    let token: VerifiedAccessToken?

    var appID: UUID { self.grant.appID }

    /// The database identity of the request: `authenticated` with the token's verified claims, else the API key's
    /// role with only the app in the claims. Nothing from the request body or headers can choose it.
    var identity: RequestIdentity {
        if let token { return RequestIdentity(role: .authenticated, claimsJSON: token.claimsJSON) }
        let claims = #"{"role":"\#(self.grant.role.rawValue)","app_id":"\#(self.grant.appID.lowercasedString)"}"#
        return RequestIdentity(role: self.grant.role, claimsJSON: claims)
    }
}

/// Turns `apikey` and `Authorization` into a `Caller`, or a 401 in the documented shape.
struct Authenticator: Sendable {
    let keys: APIKeyResolver
    let tokens: TokenService

    func authenticate(_ request: Request) async throws -> Caller {
        let key = request.headers[.apiKey] ?? request.uri.queryParameters["apikey"].map(String.init)
        guard let key, !key.isEmpty else {
            throw APIError(.unauthorized, code: "no_api_key", message: "No API key found in request")
        }
        guard let grant = try await self.keys.resolve(key) else {
            throw APIError(.unauthorized, code: "invalid_api_key", message: "Invalid API key")
        }
        guard let authorization = request.headers[.authorization] else { return Caller(grant: grant, token: nil) }
        guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            throw APIError.unauthorized("bad_jwt", "Authorization must be a Bearer token")
        }
        let bearer = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        // The SDKs send the API key itself as the bearer until there is a session.
        if bearer == key { return Caller(grant: grant, token: nil) }
        let token: VerifiedAccessToken
        do {
            token = try self.tokens.verifyAccessToken(bearer)
        } catch let error as JWTError {
            throw APIError.unauthorized(error.reason == .expired ? "token_expired" : "bad_jwt", "Invalid or expired access token")
        } catch {
            throw APIError.unauthorized("bad_jwt", "Invalid access token")
        }
        guard token.appID == grant.appID else {
            throw APIError.unauthorized("bad_jwt", "The access token belongs to another app")
        }
        return Caller(grant: grant, token: token)
    }

    /// A caller that must be a signed-in user.
    func authenticateUser(_ request: Request) async throws -> (Caller, VerifiedAccessToken) {
        let caller = try await self.authenticate(request)
        guard let token = caller.token else {
            throw APIError.unauthorized("no_authorization", "This endpoint requires a Bearer access token")
        }
        return (caller, token)
    }
}
