import Hummingbird
import Logging

/// Logs each request's method, path (never the query string, which may carry an `apikey`), status and duration.
/// Headers and bodies are never logged: they carry keys, tokens and device secrets.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let level: Logger.Level

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        var status = "error"
        defer {
            context.logger.log(
                level: self.level, "request",
                metadata: [
                    "http.method": "\(request.method)", "http.path": "\(request.uri.path)", "http.status": "\(status)",
                    "http.duration": "\(ContinuousClock.now - started)",
                ]
            )
        }
        do {
            let response = try await next(request, context)
            status = "\(response.status.code)"
            return response
        } catch let error as any HTTPResponseError {
            status = "\(error.status.code)"
            throw error
        }
    }
}
