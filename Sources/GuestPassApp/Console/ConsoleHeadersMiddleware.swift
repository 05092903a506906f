import HTTPTypes
import Hummingbird

/// Headers on every console response: a Content-Security-Policy that allows no inline script or style and no other
/// origin (the console needs none: pages are server-rendered, charts are SVG in the page), no framing, no sniffing,
/// no referrer, no caching (pages show account data).
struct ConsoleHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    static var contentSecurityPolicy: String {
        "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; form-action 'self'; "
            + "frame-ancestors 'none'; base-uri 'none'"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.xFrameOptions] = "DENY"
        response.headers[.referrerPolicy] = "no-referrer"
        response.headers[.cacheControl] = "no-store"
        return response
    }
}

extension HTTPField.Name {
    static var xFrameOptions: Self { Self("X-Frame-Options")! }
    static var referrerPolicy: Self { Self("Referrer-Policy")! }
}
