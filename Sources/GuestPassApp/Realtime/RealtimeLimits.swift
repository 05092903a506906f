/// The caps of `/realtime/v1/websocket`, each a refusal the client can read rather than a resource it can exhaust.
/// The defaults follow Supabase's documented limits where it has one (100 channels per connection, 100 values per
/// `in` filter, 1 MiB per change); the connection counts are per server process (replicas share nothing but the
/// database, so a client can hold this many on each replica).
public struct RealtimeSocketLimits: Sendable {
    /// Largest WebSocket message accepted or sent in one frame (Hummingbird's default is 16 KiB; a change can be 1 MiB).
    public var maxFrameBytes = 1 << 20
    /// Open sockets per client address (after the trusted proxy header), and per app.
    public var socketsPerAddress = 100
    public var socketsPerApp = 10_000
    /// Channels one socket may join, and `postgres_changes` bindings one channel may hold.
    public var channelsPerSocket = 100
    public var bindingsPerChannel = 100
    /// Messages a socket may send per second (heartbeats included), averaged over a one-second window; past it the
    /// socket is closed with 1008 "Too many messages per second".
    public var messagesPerSecond = 100
    /// Largest broadcast payload (its JSON text), like Supabase's 256 KB on the free plan.
    public var maxBroadcastBytes = 256 * 1024
    /// Broadcast bytes one socket may send: `broadcastBurstBytes` at once, refilled at `broadcastBytesPerSecond` (a
    /// token bucket); past it a broadcast is refused (`rate_limited`, the socket stays open). Every receiver's queue
    /// takes what every sender sends within one poll, so this keeps a burst of a few clients from overflowing the
    /// queues of clients that are keeping up.
    public var broadcastBytesPerSecond = 4 << 20
    public var broadcastBurstBytes = 1 << 20
    /// Presence metas one socket may track per channel.
    public var presencePerChannel = 10
    /// Frames and bytes queued for one socket before it counts as too slow and is closed.
    public var outboxFrames = 1000
    public var outboxBytes = 8 << 20
    /// A socket that sends nothing (not even a heartbeat, every 25 s in the SDKs) for this long is closed.
    public var idleTimeout: Duration = .seconds(60)
    /// How often the server re-checks that a signed-in subscriber's session is live and its device not revoked.
    public var sessionCheckInterval: Duration = .seconds(30)

    public init() {}
}
