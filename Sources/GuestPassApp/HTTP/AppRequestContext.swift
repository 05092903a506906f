import Foundation
import GuestPassPostgres
public import Hummingbird
public import HummingbirdWebSocket
import NIOConcurrencyHelpers
import NIOCore

/// The request context of every route: Hummingbird's core storage, the client's socket address, and the caller once
/// `AuthenticationMiddleware` has run (routes reach it typed through `CallerContext` / `SignedInContext`).
public struct AppRequestContext: RequestContext, RemoteAddressRequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer of the TCP connection (the load balancer, when there is one).
    public let remoteAddress: SocketAddress?
    /// The connection (the Realtime upgrade leaves its refusal on the connection's pipeline: `UpgradeRefusals`).
    let channel: any Channel
    /// Who is calling, on the route groups that authenticate.
    var caller: Caller? {
        didSet {
            self.loggedAppID.withLockedValue { $0 = self.caller?.appID }
            self.callerRoleBox.withLockedValue { $0 = self.caller?.identity.role }
        }
    }
    /// The caller's app, for the request log line (shared by every copy of this context, so the outermost middleware
    /// sees what authentication found).
    let loggedAppID = NIOLockedValueBox<UUID?>(nil)
    /// The database role the caller runs as, for the error mapping of the outer `ErrorMiddleware` (shared likewise).
    private let callerRoleBox = NIOLockedValueBox<DatabaseRole?>(nil)
    var callerRole: DatabaseRole? { self.callerRoleBox.withLockedValue { $0 } }
    /// The code of the 5xx error `ErrorMiddleware` answered, for the console's last errors (`ServiceHistory`; shared
    /// likewise, so the outer `RequestMetricsMiddleware` sees it).
    private let answeredServerErrorCodeBox = NIOLockedValueBox<String?>(nil)
    var answeredServerErrorCode: String? {
        get { self.answeredServerErrorCodeBox.withLockedValue { $0 } }
        nonmutating set { self.answeredServerErrorCodeBox.withLockedValue { $0 = newValue } }
    }
    public var responseEncoder: CompactJSONResponseEncoder { CompactJSONResponseEncoder() }
    /// Where the Realtime upgrade route leaves its socket handler (`RealtimeRoutes`).
    public let webSocket = WebSocketHandlerReference<AppRequestContext>()

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.channel = source.channel
    }
}
