import Foundation
import GuestPassCrypto
import GuestPassDeviceCheck
import GuestPassPostgres
public import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import GuestPassStore

/// The error shape of a route group. Each group declares its dialect once (`ErrorMiddleware(dialect:)`); handlers
/// throw `APIError`s, `PostgresError`s or `DeviceCheckError`s and never build a body themselves.
public enum ErrorDialect: Sendable {
    /// `{"code": "…", "message": "…"}`: GoTrue's 2024-01-01 shape, for `/auth/v1` and GuestPass's own `/v1`.
    case goTrue
    /// `{"code", "message", "details", "hint"}`, every key present: PostgREST's shape, for `/rest/v1`.
    case postgREST
    /// `{"statusCode": "404", "code", "error", "message"}` with HTTP 400 for semantic 4xx: Supabase Storage's shape, for
    /// `/storage/v1` (`StorageFailure`).
    case storage
}

/// An error answered to the client: status, code, message (never secrets, tokens or SQL), PostgREST's optional
/// details and hint, and extra headers (`Retry-After`, `WWW-Authenticate`).
public struct APIError: Error, Sendable {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    public var details: String?
    public var hint: String?
    public var headers: HTTPFields
    /// GoTrue's `weak_password.reasons` (length, characters), for `weak_password`.
    public var weakPasswordReasons: [String]?
    /// Storage's legacy `error` name (`not_found`, `Duplicate`, …); set by `StorageFailure`.
    var storageErrorName: String?
    /// A refused bearer token in PostgREST's words, answered instead of `code` and `message` on `/rest/v1`.
    var tokenComplaint: PostgRESTTokenComplaint?

    public init(
        _ status: HTTPResponse.Status, code: String, message: String, details: String? = nil, hint: String? = nil,
        headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.hint = hint
        self.headers = headers
    }

    // MARK: Common errors

    static func validation(_ message: String) -> APIError { APIError(.badRequest, code: GoTrueCode.validationFailed, message: message) }
    static func badJSON(_ message: String = "The request body is not valid JSON") -> APIError {
        APIError(.badRequest, code: GoTrueCode.badJson, message: message)
    }
    static func unauthorized(_ code: String, _ message: String) -> APIError {
        APIError(.unauthorized, code: code, message: message, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
    }
    static let unexpected = APIError(.internalServerError, code: GoTrueCode.unexpectedFailure, message: "Unexpected failure")
}

// MARK: - The one mapping

extension APIError {
    /// Every failure as the answer of a route group speaking `dialect`: the one place where SQLSTATEs, data-layer and
    /// DeviceCheck failures and domain errors become HTTP statuses, codes and headers. `anonymous`: the request ran as
    /// the `anon` role (PostgREST answers 42501 with 401 then, else 403).
    static func answer(for error: any Error, dialect: ErrorDialect, anonymous: Bool) -> APIError {
        if dialect == .storage { return StorageFailure.answer(for: error) }
        switch error {
        case let error as APIError: return dialect == .postgREST ? error.inPostgRESTDialect : error
        case let error as PostgRESTRefusal: return self.answer(for: APIError(refusal: error), dialect: dialect, anonymous: anonymous)
        case let error as PostgresError: return self.database(error, dialect: dialect, anonymous: anonymous)
        case let error as DeviceCheckError:
            if error.kind == .badDeviceToken {
                return APIError(.badRequest, code: GoTrueCode.invalidDeviceToken, message: "Apple rejected the DeviceCheck token")
            }
            return APIError(
                .serviceUnavailable, code: GoTrueCode.devicecheckUnavailable,
                message: "Apple DeviceCheck is unavailable; nothing was granted, retry later", headers: [.retryAfter: "5"]
            )
        case let error as HTTPError:
            let code = error.status == .notFound ? GoTrueCode.notFound : error.status.code == 413 ? GoTrueCode.requestTooLarge : GoTrueCode.badRequest
            return APIError(error.status, code: code, message: error.body ?? error.status.reasonPhrase)
        default:
            return .unexpected
        }
    }

    /// A request the store's statement builders refused, with the status of its kind.
    private init(refusal: PostgRESTRefusal) {
        let status: HTTPResponse.Status =
            switch refusal.kind {
            case .badRequest: .badRequest
            case .multipleChoices: .multipleChoices
            case .methodNotAllowed: .methodNotAllowed
            }
        self.init(status, code: refusal.code, message: refusal.message, details: refusal.details, hint: refusal.hint)
    }

    /// PostgREST's codes for what the auth layer and the body parser refuse.
    private var inPostgRESTDialect: APIError {
        var converted = self
        if let complaint = self.tokenComplaint {
            converted = APIError(.unauthorized, code: complaint.code, message: complaint.message, details: complaint.details, headers: self.headers)
        } else if self.status == .unauthorized {
            converted = APIError(.unauthorized, code: PostgRESTCode.invalidToken, message: self.message, headers: self.headers)
        } else if self.code == "bad_json" {
            converted = APIError(.badRequest, code: PostgRESTCode.invalidBody, message: self.message, headers: self.headers)
        }
        return converted
    }

    private static func database(_ error: PostgresError, dialect: ErrorDialect, anonymous: Bool) -> APIError {
        let state = error.sqlState
        if error.kind == .acquireTimeout {
            return dialect == .postgREST
                ? APIError(
                    .serviceUnavailable, code: PostgRESTCode.poolTimeout, message: "Timed out acquiring connection from connection pool.",
                    headers: [.retryAfter: "1"])
                : APIError(
                    .serviceUnavailable, code: GoTrueCode.databaseUnavailable, message: "The database is busy; retry shortly",
                    headers: [.retryAfter: "1"])
        }
        if error.kind == .decoding || error.kind == .protocolViolation { return .unexpected }
        if error.kind != .server || state?.isUnavailability == true {
            return dialect == .postgREST
                ? APIError(.serviceUnavailable, code: PostgRESTCode.databaseUnreachable, message: "Could not connect with the database")
                : APIError(.serviceUnavailable, code: GoTrueCode.databaseUnavailable, message: "The database is unavailable; retry shortly")
        }
        let wait = error.detail.flatMap { Int($0) }.map { String(max(1, $0)) }
        switch dialect {
        case .postgREST:
            return self.postgREST(error, anonymous: anonymous, retryAfter: wait)
        case .storage:
            return StorageFailure.answer(for: error)
        case .goTrue:
            switch state {
            case .rateLimited:
                return APIError(
                    .tooManyRequests, code: GoTrueCode.overRequestRateLimit, message: "Too many requests; retry later",
                    headers: [.retryAfter: wait ?? "60"]
                )
            case .queryCanceled:
                return APIError(.serviceUnavailable, code: GoTrueCode.statementTimeout, message: "The request took too long; retry shortly")
            case .insufficientPrivilege:
                // The access token verified, but its session or user is gone (a logout, a revoked device, a deleted
                // account) and the server function refused it: GoTrue's answer for a token without a session.
                return APIError(.forbidden, code: GoTrueCode.sessionNotFound, message: "The session or user of the access token no longer exists")
            case .invalidParameterValue:
                return .validation(error.message)
            case let state? where state.errorClass == "22":
                // 22xxx: NUL or invalid text, bad formats, out-of-range values - the client's values.
                return .validation("A value in the request is not valid (SQLSTATE \(state.rawValue))")
            default:
                return .unexpected
            }
        }
    }

    /// PostgREST's SQLSTATE → HTTP table (`Error.hs` `mapSQLtoHTTP`); the code is the SQLSTATE. The same as PostgREST
    /// for 42501 (401 as `anon` with `WWW-Authenticate: Bearer`, else 403), 23505 and 23503 (409), 25006 (405), 42883
    /// and 42P01 (404), `PTxyz` (xyz) and P0001 (400). Deliberate differences, each for a reason:
    /// - 40001 and 40P01 (serialization failure, deadlock) are 409, not 500: a conflict the client can retry as it is.
    /// - 57014 (statement timeout) is 503, not 500: the role's time limit, retryable, not a server fault.
    /// - Classes 08, 53 and 57 (connection, resources, operator intervention; 53400 included, which PostgREST answers
    ///   500) are 503 `PGRST000` (`database(_:)`): the database is unavailable, retry.
    /// - A 500 says "Unexpected failure" and nothing of the server's message: internals never reach a client.
    /// - Client classes are 22, 23, 42, P0, 0A, 2B, 2F, 39 and 44 (400; PostgREST answers 39 and P0 other than P0001
    ///   with 500); every other class is 500, where PostgREST's default is 400 — our SQL raises nothing else on
    ///   purpose, so anything else is our bug, logged, and not the client's to fix.
    /// - 42P17 (infinite recursion in a policy or rule) and 54001 (stack depth exceeded: a trigger or function that
    ///   recurses) are PostgREST's 500, but with PostgreSQL's message as PostgREST sends it: they name only the app's
    ///   own relation or the limit its definitions ran into, which its developer needs to fix them.
    /// - An app's `RAISE SQLSTATE 'PGRST'` with PostgREST's JSON message and detail answers as it says
    ///   (`raisedByApp(message:detail:)`).
    /// - A PATCH or DELETE without a filter never reaches SQL: the table routes answer 400 `21000` themselves, as
    ///   Supabase's `safeupdate` would (PostgREST maps that 21000 to 400 too).
    private static func postgREST(_ error: PostgresError, anonymous: Bool, retryAfter: String?) -> APIError {
        let state = error.sqlState ?? SQLState("XX000")
        var headers: HTTPFields = [:]
        let status: HTTPResponse.Status
        switch state {
        case .postgREST:
            // Raised by the table API's statements (`guestpass_server.refuse_table_result`) so the transaction rolls back:
            // the message is the PostgREST code, the detail the row count; or by `guestpass_server.parse_tsquery`, the
            // detail PostgreSQL's complaint about an `fts` filter's query.
            let rows = error.detail ?? "0"
            switch error.message {
            case PostgRESTCode.queryParse:
                return APIError(.badRequest, code: PostgRESTCode.queryParse, message: "Invalid full-text search query", details: error.detail)
            case PostgRESTCode.notSingular: return TableResponse.notSingular(Int(rows) ?? 0)
            case PostgRESTCode.putKeyMismatch:
                return APIError(.badRequest, code: PostgRESTCode.putKeyMismatch, message: "Payload values do not match URL in primary key column(s)")
            case PostgRESTCode.maxAffected:
                return APIError(
                    .badRequest, code: PostgRESTCode.maxAffected, message: "Query result exceeds max-affected preference constraint",
                    details: "The query affects \(rows) rows")
            default: return .raisedByApp(message: error.message, detail: error.detail)
            }
        case .insufficientPrivilege:
            // PostgREST: 401 with `WWW-Authenticate: Bearer` for the anonymous role, 403 for a role that authenticated.
            status = anonymous ? .unauthorized : .forbidden
            if anonymous { headers[.wwwAuthenticate] = "Bearer" }
        case .uniqueViolation, .foreignKeyViolation, .serializationFailure, .deadlockDetected: status = .conflict
        case .readOnlySQLTransaction: status = .methodNotAllowed
        case .undefinedFunction, .undefinedTable: status = .notFound
        case .queryCanceled: status = .serviceUnavailable
        case .infiniteRecursion, .statementTooComplex:
            return APIError(.internalServerError, code: state.rawValue, message: error.message, details: error.detail, hint: error.hint)
        case _ where state.rawValue.hasPrefix("PT"):
            status = Int(state.rawValue.dropFirst(2)).flatMap { (400...599).contains($0) ? HTTPResponse.Status(code: $0) : nil } ?? .badRequest
        case _ where state.isClientError:
            status = .badRequest
        default:
            status = .internalServerError
        }
        if status == .tooManyRequests, let retryAfter { headers[.retryAfter] = retryAfter }
        if status == .internalServerError { return APIError(status, code: state.rawValue, message: "Unexpected failure") }
        return APIError(status, code: state.rawValue, message: error.message, details: error.detail, hint: error.hint, headers: headers)
    }
}

// MARK: - Rendering

extension APIError {
    /// The response in `dialect`'s shape, with `x-sb-error-code` and the client's `X-Supabase-Api-Version` echoed.
    /// Keys in a fixed (byte) order: equal errors are byte-identical (no oracle in the ordering of a body).
    func response(dialect: ErrorDialect, request: Request) throws -> Response {
        let (headers, data) = try self.rendered(dialect: dialect, request: request)
        if dialect == .storage {
            // HEAD answers carry no body (the real server sends none for a missing object either).
            let body = request.method == .head ? ByteBuffer() : ByteBuffer(bytes: data)
            return Response(status: StorageFailure.httpStatus(self.status), headers: headers, body: .init(byteBuffer: body))
        }
        return Response(status: self.status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// The headers and body of `response(dialect:request:)`, for a writer that is not Hummingbird's (the refused
    /// WebSocket upgrade, `UpgradeRefusals`).
    func rendered(dialect: ErrorDialect, request: Request) throws -> (headers: HTTPFields, body: [UInt8]) {
        let data: [UInt8]
        switch dialect {
        case .goTrue:
            data = try CompactJSONEncoder().encode(
                GoTrueErrorBody(
                    code: self.code, message: self.message, weak_password: self.weakPasswordReasons.map { .init(reasons: $0) }))
        case .postgREST:
            data = try CompactJSONEncoder().encode(
                PostgRESTErrorBody(code: self.code, message: self.message, details: self.details, hint: self.hint))
        case .storage:
            data = try CompactJSONEncoder().encode(
                StorageErrorBody(
                    statusCode: String(self.status.code), code: self.code, error: self.storageErrorName ?? "Error", message: self.message))
        }
        var headers = self.headers
        // PostgREST names the charset (`application/json; charset=utf-8`), as on its successful answers.
        headers[.contentType] = dialect == .postgREST ? "application/json; charset=utf-8" : "application/json"
        headers[.supabaseErrorCode] = self.code
        if dialect == .postgREST {
            // As PostgREST: its charset, and every error's code in `Proxy-Status` (RFC 9209) for proxies and logs.
            headers[.contentType] = "application/json; charset=utf-8"
            headers[.proxyStatus] = "PostgREST; error=\(self.code)"
        }
        if let version = request.headers[.supabaseAPIVersion] { headers[.supabaseAPIVersion] = version }
        return (headers, data)
    }
}

/// GoTrue's error body.
struct GoTrueErrorBody: Codable {
    struct WeakPassword: Codable {
        let reasons: [String]
    }
    let code: String
    let message: String
    /// Present for `weak_password` only (supabase-py reads it and fails without it).
    var weak_password: WeakPassword? = nil
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
    static let proxyStatus = Self("Proxy-Status")!
    static let apiKey = Self("apikey")!
    static let idempotencyKey = Self("Idempotency-Key")!
}

/// Answers every error of its route group in the group's dialect (`APIError.answer(for:dialect:anonymous:)`), and
/// logs the server's own failures (5xx) once, without internals a client could see.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let dialect: ErrorDialect

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            // The role the request ran as, once authentication found it (else: no token means anonymous).
            let role = (context as? AppRequestContext)?.callerRole ?? (request.bearerToken == nil ? .anon : .authenticated)
            let answer = APIError.answer(for: error, dialect: self.dialect, anonymous: role == .anon)
            if let error = error as? PostgresError {
                if error.sqlState == .rateLimited {
                    ServiceMetrics.rateLimited(self.dialect == .postgREST ? "postgrest" : "gotrue")
                } else {
                    ServiceMetrics.databaseError(error.kind == .acquireTimeout ? "pool" : error.sqlState?.errorClass ?? "connection")
                }
            }
            if answer.status.code >= 500 {
                (context as? AppRequestContext)?.answeredServerErrorCode = answer.code
                var metadata: Logger.Metadata = ["error": "\(type(of: error))", "http.status": "\(answer.status.code)"]
                if let error = error as? PostgresError {
                    metadata["db.error"] = "\(error.kind)"
                    metadata["db.sqlstate"] = "\(error.sqlState?.rawValue ?? "-")"
                }
                if let error = error as? DeviceCheckError { metadata["devicecheck.error"] = "\(error)" }
                context.logger.error("request failed", metadata: metadata)
            }
            return try answer.response(dialect: self.dialect, request: request)
        }
    }
}
