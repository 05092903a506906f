public import AsyncHTTPClient
import NIOCore

/// The HTTP client of every call to Apple's Sign in with Apple endpoints (keys, code exchange, revocation).
///
/// Design and limits:
/// - A connection that cannot be made fails its request at once: a refused connection or a name that does not resolve
///   answers in milliseconds. async-http-client's shared client retries a failed connection with backoff until the
///   request's deadline (`retryConnectionEstablishment`), which made every sign-in wait the whole timeout (5 s) while
///   Apple was unreachable, even when the connection was refused at once.
/// - Every request still has a deadline (`AppleHTTP.defaultTimeout`, `GUESTPASS_APPLE_TIMEOUT_MS`): a host that accepts
///   nothing and refuses nothing (dropped packets) or answers slowly costs at most that.
/// - One client for the process (like `HTTPClient.shared`), never shut down: it holds only idle keep-alive connections.
public enum AppleHTTP {
    /// The longest one call to Apple may take, connecting included, unless configured otherwise.
    public static let defaultTimeout: Duration = .seconds(5)

    /// The process's client for Apple: no retry of failed connections, a connect timeout as long as the longest
    /// configurable call.
    public static var shared: HTTPClient { appleHTTPClient }
}

private let appleHTTPClient: HTTPClient = {
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool.retryConnectionEstablishment = false
    configuration.timeout.connect = .seconds(60)
    return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
}()

extension Duration {
    /// This duration as NIO's `TimeAmount` (nanoseconds, saturating).
    var timeAmount: TimeAmount {
        let (seconds, attoseconds) = self.components
        let (nanos, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return .nanoseconds(overflow ? .max : nanos &+ attoseconds / 1_000_000_000)
    }
}
