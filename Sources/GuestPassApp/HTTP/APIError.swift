import Foundation
import GuestPassPostgres
import HTTPTypes
import Hummingbird
import NIOCore

/// An error answered in the documented shape `{"code": "<string>", "message": "…"}` (GoTrue's 2024-01-01 format),
/// with `x-sb-error-code` set. Messages never carry secrets, tokens or SQL.
public struct APIError: Error, HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    /// Extra response headers (`Retry-After`, `WWW-Authenticate`).
    public var headers: HTTPFields = [:]
    /// PostgREST's shape adds `details` and `hint` (the `/rest/v1` routes use it).
    public var postgrestShape = false
    public var details: String?
    public var hint: String?

    public init(_ status: HTTPResponse.Status, code: String, message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let data: Data
        if self.postgrestShape {
            data = try JSONEncoder().encode(PostgRESTErrorBody(code: self.code, message: self.message, details: self.details, hint: self.hint))
        } else {
            data = try JSONEncoder().encode(ErrorBody(code: self.code, message: self.message))
        }
        var headers = self.headers
        headers[.contentType] = "application/json"
        headers[.supabaseErrorCode] = self.code
        if let version = request.headers[.supabaseAPIVersion] { headers[.supabaseAPIVersion] = version }
        return Response(status: self.status, headers: headers, body: .init(byteBuffer: ByteBuffer(data: data)))
    }

    // MARK: Common errors

    static func validation(_ message: String) -> APIError { APIError(.badRequest, code: "validation_failed", message: message) }
    static func badJSON(_ message: String = "The request body is not valid JSON") -> APIError {
        APIError(.badRequest, code: "bad_json", message: message)
    }
    static func unauthorized(_ code: String, _ message: String) -> APIError {
        APIError(.unauthorized, code: code, message: message, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
    }
    static let databaseUnavailable = APIError(.serviceUnavailable, code: "database_unavailable", message: "The database is unavailable; retry shortly")

    /// Maps data-layer failures: connection trouble is a retryable 503, a data exception (class 22) the client's 400.
    static func from(_ error: PostgresError) -> APIError {
        if error.isConnectionError || error.kind == .acquireTimeout || error.kind == .poolClosed || error.sqlState?.errorClass == "53" {
            return .databaseUnavailable
        }
        if error.sqlState == .queryCanceled {
            return APIError(.serviceUnavailable, code: "statement_timeout", message: "The request took too long; retry shortly")
        }
        // Data exceptions (22xxx: NUL or invalid text, bad formats, out-of-range values) come from the client's values.
        if error.kind == .server, error.sqlState?.errorClass == "22" {
            return .validation("A value in the request is not valid (SQLSTATE \(error.sqlState?.rawValue ?? "22000"))")
        }
        return APIError(.internalServerError, code: "unexpected_failure", message: "Unexpected failure")
    }
}

/// The documented error body of the auth API.
struct ErrorBody: Codable {
    let code: String
    let message: String
}

/// PostgREST's error body: every key present, `null` when empty.
struct PostgRESTErrorBody: Codable {
    let code: String
    let message: String
    let details: String?
    let hint: String?

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.code, forKey: .code)
        try container.encode(self.message, forKey: .message)
        try container.encode(self.details, forKey: .details)
        try container.encode(self.hint, forKey: .hint)
    }
}

extension HTTPField.Name {
    static let supabaseAPIVersion = Self("X-Supabase-Api-Version")!
    static let supabaseErrorCode = Self("x-sb-error-code")!
    static let apiKey = Self("apikey")!
    static let idempotencyKey = Self("Idempotency-Key")!
}

/// Turns stray errors into the documented error shape: a PostgresError that escaped a route becomes a 503 or 500
/// without internals; Hummingbird's own HTTP errors keep their status.
struct APIErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as PostgresError {
            context.logger.error("database failure", metadata: ["db.error": "\(error.kind)", "db.sqlstate": "\(error.sqlState?.rawValue ?? "-")"])
            throw APIError.from(error)
        } catch let error as HTTPError {
            let code = error.status == .notFound ? "not_found" : error.status.code == 413 ? "request_too_large" : "bad_request"
            throw APIError(error.status, code: code, message: error.body ?? error.status.reasonPhrase)
        } catch {
            context.logger.error("unexpected failure", metadata: ["error": "\(type(of: error))"])
            throw APIError(.internalServerError, code: "unexpected_failure", message: "Unexpected failure")
        }
    }
}
