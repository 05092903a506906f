import Dispatch
import Hummingbird
import Logging
import Metrics
import NIOConcurrencyHelpers

/// The HTTP metrics: requests in flight by method (`http.server.active_requests`), requests by route template, method
/// and status (`hb.requests`), their latency (`http.server.request.duration`) and the requests that ended in an error
/// thrown past the error middleware (`hb.request.errors`), under the names and labels of Hummingbird's
/// `MetricsMiddleware`.
///
/// Unlike Hummingbird's, it records a request when the handler returns its response instead of wrapping the body in a
/// closure that runs after the body is written. A wrapped body costs Hummingbird's one-write fast path: the head and the
/// body went out in two `write` calls, two TCP segments, on every response. The latency therefore ends when the
/// response is ready, not when its last byte is handed to the socket (for these small bodies, microseconds apart).
///
/// Each answered request is also counted in `history`, the console's in-memory hour (`ServiceHistory`): a 5xx with
/// the code `ErrorMiddleware` answered and the request id `RequestLogMiddleware` gave it (both read only then).
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let cache = RequestMetricsCache()
    let history: ServiceHistory?

    init(history: ServiceHistory? = nil) {
        self.history = history
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = DispatchTime.now().uptimeNanoseconds
        let active = self.cache.active(request.method)
        active.increment()
        defer { active.decrement() }
        do {
            let response = try await next(request, context)
            let metrics = self.cache.endpoint(context.endpointPath ?? "Unknown", request.method, response.status)
            metrics.requests.increment()
            let elapsed = DispatchTime.now().uptimeNanoseconds - started
            metrics.duration.recordNanoseconds(elapsed)
            if let history = self.history {
                let status = Int(response.status.code)
                if status >= 500 {
                    history.record(
                        path: request.uri.path, route: context.endpointPath ?? "Unknown", status: status, nanoseconds: elapsed,
                        code: (context as? AppRequestContext)?.answeredServerErrorCode, requestID: Self.requestID(context))
                } else {
                    history.record(path: request.uri.path, route: context.endpointPath ?? "Unknown", status: status, nanoseconds: elapsed)
                }
            }
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let metrics = self.cache.endpoint(context.endpointPath ?? "NotFound", request.method, status)
            metrics.requests.increment()
            metrics.errors.increment()
            self.history?.record(
                path: request.uri.path, route: context.endpointPath ?? "NotFound", status: Int(status.code),
                nanoseconds: DispatchTime.now().uptimeNanoseconds - started, code: (error as? APIError)?.code,
                requestID: Self.requestID(context))
            throw error
        }
    }

    /// The request's id, as `RequestLogMiddleware` put it on the request's logger.
    static func requestID(_ context: Context) -> String? {
        guard case .string(let id) = context.logger[metadataKey: "request_id"] else { return nil }
        return id
    }
}

/// The metric handles of each method and of each (route, method, status), made once: creating one asks the metrics
/// backend to look its name and labels up.
private final class RequestMetricsCache: Sendable {
    struct EndpointKey: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: HTTPResponse.Status
    }

    struct EndpointMetrics: Sendable {
        let requests: Counter
        let duration: Timer
        let errors: Counter

        init(_ key: EndpointKey) {
            let labels = [
                ("http.route", key.route), ("http.request.method", key.method.description),
                ("http.response.status_code", key.status.code.description),
            ]
            self.requests = Counter(label: "hb.requests", dimensions: labels)
            self.duration = Timer(label: "http.server.request.duration", dimensions: labels, preferredDisplayUnit: .seconds)
            self.errors = Counter(
                label: "hb.request.errors",
                dimensions: [
                    ("http.route", key.route), ("http.request.method", key.method.description), ("error.type", key.status.code.description),
                ]
            )
        }
    }

    private let activeByMethod = NIOLockedValueBox<[HTTPRequest.Method: Meter]>([:])
    private let byEndpoint = NIOLockedValueBox<[EndpointKey: EndpointMetrics]>([:])

    func active(_ method: HTTPRequest.Method) -> Meter {
        self.activeByMethod.withLockedValue { cache in
            if let meter = cache[method] { return meter }
            let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method.description)])
            cache[method] = meter
            return meter
        }
    }

    func endpoint(_ route: String, _ method: HTTPRequest.Method, _ status: HTTPResponse.Status) -> EndpointMetrics {
        let key = EndpointKey(route: route, method: method, status: status)
        return self.byEndpoint.withLockedValue { cache in
            if let metrics = cache[key] { return metrics }
            let metrics = EndpointMetrics(key)
            cache[key] = metrics
            return metrics
        }
    }
}
