import Foundation
import HTTPTypes
import Hummingbird
import GuestPassStore

/// 405 for a method a known path does not serve (TRACE anywhere, PUT on `/rest/v1/rpc/<fn>` or `/auth/v1/signup`, …),
/// with `Allow` listing the methods it does, in the route group's error shape: PostgREST's four keys with code
/// `PGRST117` under `/rest/v1`, GoTrue's `{code: GoTrueCode.methodNotAllowed, message}` everywhere else. An unknown path stays
/// 404.
///
/// Design: the known paths and their methods are read from the bundled OpenAPI document, which documents every
/// registered route (`e2e/test_openapi.py` checks both ways), so there is no second route table to keep. The middleware
/// is added to the router after every route (`buildRouter`), so it runs only when no route matched: it costs the
/// routed requests nothing. A documented literal path (`/rest/v1/rpc/get_quota`) wins over a template
/// (`/rest/v1/rpc/{function}`), and a template with more literal segments wins over one with fewer; a `{name}` segment
/// matches any one non-empty segment. The table API answers its own
/// 405s (`Tables/TableRoutes.swift`).
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    /// One documented path: its segments (nil for a `{name}` template segment) and methods in the document's order.
    struct KnownPath: Sendable {
        let segments: [String?]
        let methods: [String]

        var isLiteral: Bool { !self.segments.contains(nil) }
        /// How many of its segments are literal: the more, the more specific.
        var literalCount: Int { self.segments.count { $0 != nil } }

        func matches(_ parts: [Substring]) -> Bool {
            guard parts.count == self.segments.count else { return false }
            return zip(self.segments, parts).allSatisfy { segment, part in segment.map { $0 == part } ?? !part.isEmpty }
        }
    }

    let paths: [KnownPath]

    /// The paths of `document` (an OpenAPI document's bytes), the most specific first.
    init(document: Data) throws {
        let methods = ["get", "head", "post", "put", "patch", "delete", "options", "trace"]
        guard let root = try JSONSerialization.jsonObject(with: document) as? [String: Any],
            let paths = root["paths"] as? [String: [String: Any]]
        else { throw OpenAPIDocument.OpenAPIDocumentMissing() }
        let known = paths.map { path, item in
            KnownPath(
                segments: path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
                    $0.hasPrefix("{") && $0.hasSuffix("}") ? nil : String($0)
                },
                methods: methods.filter { item[$0] != nil }.map { $0.uppercased() }
            )
        }
        // The most specific first, so a request's methods are its own path's: literal paths, then templates by their
        // literal segments (`/storage/v1/object/list/{bucket}` before `/storage/v1/object/{bucket}/{path}`, both of
        // which match `/storage/v1/object/list/b`).
        self.paths = known.sorted { $0.literalCount > $1.literalCount }
    }

    /// The bundled document's paths.
    static func bundled() throws -> Self {
        let buffer = try OpenAPIDocument.bundled.get()
        return try Self(document: Data(buffer.readableBytesView))
    }

    /// The methods `path` serves, or nil when no documented path matches it.
    func allowed(_ path: String) -> [String]? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        return self.paths.first { $0.matches(Array(parts)) }?.methods
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let allowed = self.allowed(request.uri.path), !allowed.contains(request.method.rawValue) else {
            return try await next(request, context)
        }
        let postgREST = request.uri.path.hasPrefix("/rest/v1/")
        let error = APIError(
            .methodNotAllowed, code: postgREST ? PostgRESTCode.unsupportedMethod : "method_not_allowed",
            message: "Unsupported HTTP method: \(request.method.rawValue)", headers: [.allow: allowed.joined(separator: ", ")]
        )
        return try error.response(dialect: postgREST ? .postgREST : .goTrue, request: request)
    }
}
