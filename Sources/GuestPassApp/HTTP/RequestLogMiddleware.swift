import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers

/// Logs one line per request (`request`, at info): request id, method, route template (never the path's values or
/// the query string, which may carry an `apikey`), status, duration in milliseconds and the caller's app. Headers and
/// bodies are never logged: they carry keys, tokens and device secrets.
///
/// The request id is the client's `X-Request-Id` when it is a sane token (1 to 128 characters of `A-Z a-z 0-9 . _ -`),
/// else Hummingbird's, as 32 hex digits (`serverRequestID`); it is put on the request's logger (`request_id`, so every line logged while serving the request
/// carries it) and echoed in the response's `X-Request-Id`.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let level: Logger.Level

    static let requestIDHeader = HTTPField.Name("X-Request-Id")!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let requestID = request.headers[Self.requestIDHeader].flatMap(Self.saneRequestID) ?? Self.serverRequestID(context.id)
        var context = context
        context.logger[metadataKey: "request_id"] = .string(requestID)
        var status = "error"
        func log() {
            let elapsed = ContinuousClock.now - started
            var metadata: Logger.Metadata = [
                "method": "\(request.method)", "route": "\(context.endpointPath ?? "unmatched")", "status": "\(status)",
                "duration_ms": "\((elapsed / .microseconds(1)).rounded() / 1000)",
            ]
            if let app = context.loggedAppID.withLockedValue({ $0 }) { metadata["app_id"] = "\(app.lowercasedString)" }
            context.logger.log(level: self.level, "request", metadata: metadata)
        }
        defer {
            // Built only when the line is written: at a level above `level` (a benchmark's `warning`) it costs nothing.
            if context.logger.logLevel <= self.level { log() }
        }
        do {
            var response = try await next(request, context)
            status = "\(response.status.code)"
            response.headers[Self.requestIDHeader] = requestID
            return response
        } catch let error as any HTTPResponseError {
            status = "\(error.status.code)"
            throw error
        }
    }

    /// Hummingbird's request id as 32 lowercase hex digits. Hummingbird writes its 128 bits as the process's random high
    /// half without leading zeros, then the low half with them, so one process in 16 would hand out 31-digit ids (or
    /// shorter); the zeros it left out go back in front, which gives the same number at a fixed width.
    static func serverRequestID(_ hummingbirdID: String) -> String {
        hummingbirdID.utf8.count >= 32 ? hummingbirdID : String(repeating: "0", count: 32 - hummingbirdID.utf8.count) + hummingbirdID
    }

    static func saneRequestID(_ value: String) -> String? {
        guard (1...128).contains(value.utf8.count),
            value.utf8.allSatisfy({ $0.isASCIIAlphanumeric || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") })
        else { return nil }
        return value
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
