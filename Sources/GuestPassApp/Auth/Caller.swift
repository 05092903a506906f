import Foundation
import GuestPassPostgres
import Hummingbird

/// Who is calling: the app of the API key and, when a valid access token was sent, the signed-in user.
struct Caller: Sendable {
    let grant: APIKeyGrant
    let token: VerifiedAccessToken?
    /// The client's IP address (socket peer, or the trusted proxy header's last entry).
    let clientAddress: String

    var appID: UUID { self.grant.appID }

    /// The database identity of the request: `authenticated` with the token's verified claims, else the API key's
    /// role with only the app in the claims; and the client's address. Nothing from the request body or headers can
    /// choose them.
    var identity: RequestIdentity {
        if let token { return RequestIdentity(role: .authenticated, claimsJSON: token.claimsJSON, clientAddress: self.clientAddress) }
        return RequestIdentity(role: self.grant.role, claimsJSON: self.grant.claimsJSON, clientAddress: self.clientAddress)
    }

    /// The identity of a server-side step run as `anon` for this caller's app (sign-up, refresh), whatever the caller's
    /// own role.
    var anonIdentity: RequestIdentity {
        RequestIdentity(role: .anon, claimsJSON: self.grant.anonClaimsJSON, clientAddress: self.clientAddress)
    }
}

extension RequestIdentity {
    /// The claims of a request made with an API key and no token: the role, and the app when known.
    private struct KeyClaims: Encodable {
        let role: String
        let app_id: String?
    }

    /// The identity of a request made with an API key only (`{"role": …, "app_id": …}`); `app` nil before the key's app
    /// is known (the key lookup itself).
    static func apiKey(_ role: DatabaseRole, app: UUID?, clientAddress: String = "") -> RequestIdentity {
        RequestIdentity(role: role, claimsJSON: self.keyClaimsJSON(role, app: app), clientAddress: clientAddress)
    }

    /// The claims JSON of `apiKey(_:app:)`; `APIKeyGrant` keeps its own so a request does not encode it again.
    static func keyClaimsJSON(_ role: DatabaseRole, app: UUID?) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let claims = KeyClaims(role: role.rawValue, app_id: app?.lowercasedString)
        return (try? encoder.encode(claims)).map { String(decoding: $0, as: UTF8.self) } ?? #"{"role":"anon"}"#
    }
}

/// Authenticates once per request, on the route groups that need a caller, and puts it on the context.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let authenticator: Authenticator

    func handle(_ request: Request, context: AppRequestContext, next: (Request, AppRequestContext) async throws -> Response) async throws -> Response
    {
        var context = context
        context.caller = try await self.authenticator.authenticate(request, context)
        return try await next(request, context)
    }
}

/// The context of routes that need an API key: the verified caller, signed in or not.
struct CallerContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let caller: Caller
    var responseEncoder: CompactJSONResponseEncoder { CompactJSONResponseEncoder() }

    init(context: AppRequestContext) throws {
        // Only a group without AuthenticationMiddleware gets here without a caller: a programming error.
        guard let caller = context.caller else { throw APIError.unexpected }
        self.coreContext = context.coreContext
        self.caller = caller
    }
}

/// The context of routes that need a signed-in user: the caller and its verified access token.
struct SignedInContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let caller: Caller
    let token: VerifiedAccessToken
    var responseEncoder: CompactJSONResponseEncoder { CompactJSONResponseEncoder() }

    init(context: AppRequestContext) throws {
        guard let caller = context.caller else { throw APIError.unexpected }
        guard let token = caller.token else {
            throw APIError.unauthorized(GoTrueCode.noAuthorization, "This endpoint requires a Bearer access token")
        }
        self.coreContext = context.coreContext
        self.caller = caller
        self.token = token
    }
}
