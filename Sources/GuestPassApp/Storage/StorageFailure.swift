import GuestPassObjectStore
import GuestPassPostgres
import HTTPTypes
import StorageProtocol

/// Supabase Storage's errors: a semantic status (`statusCode`, a string in the body), a code, the legacy `error`
/// name and a message; sent with HTTP 400 for every semantic 4xx, as the real server does (its legacy choice, pinned by
/// its acceptance suite), so both SDKs decode them. The semantic status travels as `APIError.status`; `rendered`
/// picks the HTTP status (`httpStatus`).
enum StorageFailure {
    static func make(_ status: Int, _ code: StorageErrorCode, error: String? = nil, _ message: String) -> APIError {
        var answer = APIError(HTTPResponse.Status(code: status), code: code.rawValue, message: message)
        answer.storageErrorName = error ?? code.rawValue
        return answer
    }

    static let noSuchBucket = make(404, .noSuchBucket, error: "Bucket not found", "Bucket not found")
    static let noSuchKey = make(404, .noSuchKey, error: "not_found", "Object not found")
    static let bytesMissing = make(404, .noSuchKey, error: "Not found", "The resource was not found")
    static let rowLevelSecurity = make(403, .accessDenied, error: "Unauthorized", "new row violates row-level security policy")
    static let duplicate = make(409, .keyAlreadyExists, error: "Duplicate", "The resource already exists")
    static let bucketExists = make(409, .bucketAlreadyExists, error: "Duplicate", "The resource already exists")
    static let bucketNotEmpty = make(409, .resourceNotEmpty, "The bucket you tried to delete is not empty")
    static let tooLarge = make(413, .entityTooLarge, error: "Payload too large", "The object exceeded the maximum allowed size")
    static let noContent = make(400, .invalidRequest, "No content provided")
    static let invalidSignature = make(400, .invalidSignature, "Invalid signature")
    static let expiredSignature = make(400, .invalidJWT, "The signature has expired")

    /// A user's storage limit: 413 `QuotaExceeded` (GuestPass's own; Supabase has no per-user limits).
    static func quota(_ what: String) -> APIError {
        make(413, .quotaExceeded, error: "quota_exceeded", "Storage quota exceeded: this user may keep \(what)")
    }

    static func invalidRequest(_ message: String) -> APIError { make(400, .invalidRequest, message) }
    static func invalidKey(_ key: String) -> APIError { make(400, .invalidKey, "Invalid key: \(key.prefix(200))") }
    static func invalidBucketName(_ name: String) -> APIError { make(400, .invalidBucketName, "Bucket name invalid: \(name.prefix(120))") }
    static func invalidMimeType(_ type: String) -> APIError {
        make(415, .invalidMimeType, error: "invalid_mime_type", "mime type \(type.prefix(200)) is not supported")
    }
    static func notServed(_ what: String) -> APIError {
        make(501, .notImplemented, error: "Not Implemented", "\(what) is not served by GuestPass; see the README's Storage section")
    }

    /// The authenticator's codes for an API key that is missing, unknown or in the URL: the gateway's refusals.
    static let gatewayRefusals: Set<String> = [GoTrueCode.noApiKey, GoTrueCode.invalidApiKey, GoTrueCode.secretKeyInUrl]

    /// Any failure of a storage route in storage's shape.
    static func answer(for error: any Error) -> APIError {
        switch error {
        case let error as APIError:
            if error.storageErrorName != nil { return error }
            if error.status == .unauthorized {
                // No API key, an unknown one, or a secret key in the URL: on Supabase the gateway refuses these with
                // HTTP 401 before storage runs. A bad access token is storage's own refusal (statusCode "403").
                if Self.gatewayRefusals.contains(error.code) {
                    var refused = make(401, .accessDenied, error: "Unauthorized", error.message)
                    refused.headers = error.headers
                    return refused
                }
                return make(403, .accessDenied, error: "Unauthorized", error.message)
            }
            var converted = make(error.status.code, error.status.code >= 500 ? .internalError : .invalidRequest, error: "Error", error.message)
            converted.headers = error.headers
            return converted
        case let error as ObjectName.Refusal:
            switch error {
            case .invalidKey(let key): return Self.invalidKey(key)
            case .invalidBucketName(let name): return Self.invalidBucketName(name)
            }
        case let error as MultipartParser.Failure:
            switch error {
            case .truncated: return make(400, .invalidRequest, "The multipart body ended before its closing boundary")
            case .malformed(let reason): return make(400, .invalidRequest, "The multipart body is malformed: \(reason)")
            case .tooLarge(let reason): return make(413, .entityTooLarge, error: "Payload too large", "The multipart form is too large: \(reason)")
            }
        case let error as ObjectBackendError:
            switch error {
            case .tooLarge: return Self.tooLarge
            case .notFound: return Self.bytesMissing
            case .unavailable: return make(503, .internalError, error: "Service Unavailable", "The object store is unavailable; retry shortly")
            }
        case let error as PostgresError:
            return Self.database(error)
        default:
            return make(500, .internalError, error: "Internal Server Error", "Internal Server Error")
        }
    }

    private static func database(_ error: PostgresError) -> APIError {
        if error.kind == .acquireTimeout || error.kind != .server || error.sqlState?.isUnavailability == true {
            var answer = make(503, .databaseTimeout, error: "Service Unavailable", "The database is busy or unreachable; retry shortly")
            answer.headers[.retryAfter] = "1"
            return answer
        }
        switch error.sqlState {
        case .insufficientPrivilege?: return Self.rowLevelSecurity
        case .uniqueViolation?: return Self.duplicate
        case .foreignKeyViolation?: return Self.noSuchBucket
        case .storageQuota?:
            let detail = error.detail ?? ""
            if detail == "size" { return Self.tooLarge }
            return Self.quota("at most \(Self.describe(detail))")
        case .unsupportedMediaType?: return Self.invalidMimeType(error.detail ?? "")
        case .storageReservationExpired?:
            return make(408, .invalidRequest, error: "Request Timeout", "The upload took longer than its reservation; upload again")
        case .notFoundRaised?: return Self.noSuchBucket
        case .rateLimited?: return make(429, .slowDown, error: "Too Many Requests", "Too many requests; retry later")
        case .queryCanceled?: return make(503, .databaseTimeout, error: "Service Unavailable", "The request took too long; retry shortly")
        case .serializationFailure?, .deadlockDetected?: return make(409, .invalidRequest, error: "Conflict", "A concurrent change conflicted; retry")
        case let state? where state.isClientError:
            return make(400, .invalidRequest, error: "Error", "A value in the request is not valid (SQLSTATE \(state.rawValue))")
        default: return make(500, .internalError, error: "Internal Server Error", "Internal Server Error")
        }
    }

    /// `bytes:104857600` → `104857600 bytes`.
    private static func describe(_ detail: String) -> String {
        let parts = detail.split(separator: ":", maxSplits: 1)
        guard parts.count == 2 else { return "their limit" }
        return "\(parts[1]) \(parts[0])"
    }

    /// The HTTP status of a storage error whose semantic status is `status`: 400 for every 4xx but 401 (the API key
    /// refusals, the gateway's on Supabase), 416 and 429, the status itself otherwise.
    static func httpStatus(_ status: HTTPResponse.Status) -> HTTPResponse.Status {
        switch status.code {
        case 401, 416, 429: return status
        case 400..<500: return .badRequest
        default: return status
        }
    }
}

/// Storage's error body: `statusCode` a string (supabase-swift fails on a number), then code, error, message.
struct StorageErrorBody: Encodable {
    let statusCode: String
    let code: String
    let error: String
    let message: String
}
