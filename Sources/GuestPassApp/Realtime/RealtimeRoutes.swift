import Foundation
import GuestPassPostgres
import GuestPassStore
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import RealtimeProtocol

/// What every Realtime socket shares: the channel registry, the change log, the catalog cache, presence, the token
/// verifier, the exposed schemas and the limits.
struct RealtimeServices: Sendable {
    let hub: RealtimeHub
    let feed: RealtimeFeed
    let tables: RealtimeTables
    let presence: RealtimePresence
    let pool: PostgresPool
    let tokens: TokenService
    let schemas: [String]
    var limits: RealtimeSocketLimits { self.hub.limits }

    init(pool: PostgresPool, tokens: TokenService, schemas: [String], limits: RealtimeSocketLimits) {
        let feed = RealtimeFeed(pool: pool)
        self.hub = RealtimeHub(limits: limits)
        self.feed = feed
        self.tables = RealtimeTables(pool: pool)
        self.presence = RealtimePresence(feed: feed)
        self.pool = pool
        self.tokens = tokens
        self.schemas = schemas
    }
}

/// `GET /realtime/v1/websocket`: Supabase Realtime's socket, as supabase-js, supabase-swift and supabase-py open it
/// (`?apikey=…&vsn=…`).
///
/// The upgrade is decided before upgrading: the API key must be valid (a secret key in the URL is refused, as on every
/// route), `vsn` absent, `1.0.0` or `2.0.0`, and the address and app below their socket limits. A refused upgrade is
/// answered with the reason in the documented error shape (401, 400, 429: `UpgradeRefusals`); a plain GET without the
/// upgrade gets the same checks from the HTTP route of the same path, or 426. The user's token comes later, in each
/// `phx_join`.
struct RealtimeRoutes {
    /// The socket's path (Hummingbird matches it with or without a trailing slash).
    static let path: RouterPath = "/realtime/v1/websocket"

    let services: RealtimeServices
    let authenticator: Authenticator

    /// The upgrade routes (on the WebSocket router).
    func registerUpgrade(on router: Router<AppRequestContext>) {
        do {
            router.ws(Self.path) { request, context in
                do {
                    _ = try await self.admission(request, context)
                } catch let error as APIError {
                    await UpgradeRefusals.record(error, request: request, on: context.channel)
                    throw error
                }
                return .upgrade([:])
            } onUpgrade: { inbound, outbound, context in
                let (caller, version) = try await self.admission(context.request, context.requestContext)
                let key = context.request.uri.queryParameters["apikey"].map(String.init) ?? ""
                let socket = RealtimeSocket(
                    version: version, apiKey: key.removingPercentEncoding ?? key, grant: caller.grant, address: caller.clientAddress,
                    services: self.services, logger: context.logger)
                try await self.serve(socket, inbound: inbound, outbound: outbound)
            }
        }
    }

    /// The same paths on the HTTP router: why a request was not upgraded (the upgrade router's checks, run again).
    static func registerRefusals(authenticator: Authenticator, on router: Router<AppRequestContext>) {
        do {
            router.get(Self.path) { request, context -> Response in
                _ = try await authenticator.authenticate(request, context)
                _ = try Self.version(of: request)
                throw APIError(.upgradeRequired, code: GoTrueCode.realtimeUpgradeRequired, message: "This endpoint speaks WebSocket only")
            }
        }
    }

    /// The framing a request asks for with `vsn` (absent: 1.0.0), or a 400.
    private static func version(of request: Request) throws -> RealtimeVersion {
        guard let version = RealtimeVersion(vsn: request.uri.queryParameters["vsn"].map(String.init)) else {
            throw APIError(.badRequest, code: GoTrueCode.realtimeUnsupportedVersion, message: "Unsupported vsn: use 1.0.0 or 2.0.0")
        }
        return version
    }

    /// The caller (API key only) and framing of an upgrade request, or the error that refuses it.
    private func admission(_ request: Request, _ context: AppRequestContext) async throws -> (Caller, RealtimeVersion) {
        let caller = try await self.authenticator.authenticate(request, context)
        let version = try Self.version(of: request)
        if self.services.hub.wouldRefuse(address: caller.clientAddress, app: caller.appID) {
            RealtimeMetrics.refused("connections")
            throw APIError(.tooManyRequests, code: GoTrueCode.realtimeTooManyConnections, message: "Too many connections")
        }
        return (caller, version)
    }

    /// Runs one socket: its reader (this task) and its writer (a child task draining the outbox) until either ends.
    private func serve(_ socket: RealtimeSocket, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        if let refusal = self.services.hub.admit(socket) {
            RealtimeMetrics.refused("connections")
            try? await outbound.close(.policyViolation, reason: refusal)
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Self.write(socket.outbox, to: outbound) }
            do {
                for try await message in inbound.messages(maxSize: self.services.limits.maxFrameBytes) {
                    switch message {
                    case .text(let text): await socket.receive(text: text)
                    case .binary(let buffer): await socket.receive(binary: Array(buffer: buffer))
                    }
                    if socket.outbox.isFinished { break }
                }
            } catch {
                socket.logger.debug("realtime: socket read ended", metadata: ["error": "\(error)"])
            }
            socket.outbox.finish(.normal)
            await group.waitForAll()
        }
        await socket.closed()
    }

    /// The writer: sends queued frames in order, then closes the socket the way the queue ended.
    private static func write(_ outbox: RealtimeOutbox, to outbound: WebSocketOutboundWriter) async {
        while true {
            switch await outbox.next() {
            case .success(let frames):
                do {
                    for frame in frames {
                        switch frame {
                        case .text(let text): try await outbound.writeTextMessage(text)
                        case .binary(let bytes): try await outbound.writeBinaryMessage(ByteBuffer(bytes: bytes))
                        }
                    }
                } catch {
                    outbox.finish(.normal)
                    return
                }
            case .failure(let end):
                switch end.ending {
                case .normal: try? await outbound.close(.goingAway, reason: nil)
                case .overflow: try? await outbound.close(.policyViolation, reason: "Too many messages queued")
                case .policy(let reason): try? await outbound.close(.policyViolation, reason: String(reason.prefix(120)))
                }
                return
            }
        }
    }
}
