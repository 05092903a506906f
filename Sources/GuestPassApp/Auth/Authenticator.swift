import Foundation
import GuestPassPostgres
import HTTPTypes
import Hummingbird
import GuestPassStore

/// Turns `apikey` and `Authorization` into a `Caller`, or a 401 in the documented shape.
struct Authenticator: Sendable {
    let keys: APIKeyResolver
    let tokens: TokenService

    func authenticate(_ request: Request, _ context: AppRequestContext, ignoringBearer: Bool = false) async throws -> Caller {
        let inURL: [String] = request.uri.queryParameters.getAll("apikey")
        // URLs end up in proxy and access logs: a secret key there is refused, wherever it stands.
        if inURL.contains(where: { APIKey.kind(of: $0.removingPercentEncoding ?? $0) == .secret }) {
            throw APIError(.unauthorized, code: GoTrueCode.secretKeyInUrl, message: "Secret keys are accepted only in the apikey header")
        }
        let key = request.headers[.apiKey] ?? inURL.first
        guard let key, !key.isEmpty else {
            throw APIError(.unauthorized, code: GoTrueCode.noApiKey, message: "No API key found in request")
        }
        guard let grant = try await self.keys.resolve(key) else {
            throw APIError(.unauthorized, code: GoTrueCode.invalidApiKey, message: "Invalid API key")
        }
        let clientAddress = request.clientIP(context: context, trustedHeader: self.tokens.configuration.trustedProxyHeader)
        guard request.headers[.authorization] != nil, !ignoringBearer else {
            return Caller(grant: grant, token: nil, clientAddress: clientAddress)
        }
        guard let bearer = request.bearerCredential else {
            throw APIError.unauthorized(GoTrueCode.badJwt, "Authorization must be a Bearer token")
        }
        // The SDKs send the API key itself as the bearer until there is a session.
        if bearer == key { return Caller(grant: grant, token: nil, clientAddress: clientAddress) }
        let token: VerifiedAccessToken
        do {
            token = try self.tokens.accessToken(bearer, ofApp: grant.appID)
        } catch {
            var refused =
                switch error {
                case .expired: APIError.unauthorized(GoTrueCode.tokenExpired, "Invalid or expired access token")
                case .invalid, .notYetValid, .issuedInFuture: APIError.unauthorized(GoTrueCode.badJwt, "Invalid or expired access token")
                case .malformed: APIError.unauthorized(GoTrueCode.badJwt, "Invalid access token")
                case .otherApp: APIError.unauthorized(GoTrueCode.badJwt, "The access token belongs to another app")
                }
            refused.tokenComplaint = PostgRESTTokenComplaint(bearer: bearer, refusal: error)
            throw refused
        }
        return Caller(grant: grant, token: token, clientAddress: clientAddress)
    }

}
