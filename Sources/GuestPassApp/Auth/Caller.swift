import Foundation
import GuestPassPostgres
import Hummingbird
import GuestPassStore

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

/// Authenticates once per request, on the route groups that need a caller, and puts it on the context.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let authenticator: Authenticator
    /// For GoTrue's public endpoints (`/otp`, `/verify`, …): the API key alone. supabase-py sends the last user's access
    /// token on every call, expired or not; such an endpoint must neither use it nor refuse for it.
    var ignoresBearer = false

    func handle(_ request: Request, context: AppRequestContext, next: (Request, AppRequestContext) async throws -> Response) async throws -> Response
    {
        var context = context
        context.caller = try await self.authenticator.authenticate(request, context, ignoringBearer: self.ignoresBearer)
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
