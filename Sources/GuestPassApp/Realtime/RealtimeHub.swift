import Foundation
import GuestPassPostgres
import GuestPassStore
import NIOConcurrencyHelpers
import RealtimeProtocol

/// One `postgres_changes` binding of a joined channel, as the change feed matches it.
struct ChannelBinding: Sendable {
    /// The id the join reply gave the client for this binding (what `ids` of a change event lists).
    let id: Int
    /// The captured kind it wants, or nil for `*`.
    let kind: CapturedChange.Kind?
    let schema: String
    let table: String
    let conditions: [RealtimeFilter.Condition]

    func wants(_ change: CapturedChange) -> Bool {
        change.schema == self.schema && change.table == self.table && (self.kind == nil || self.kind == change.kind)
    }
}

/// One joined channel of one socket: who joined it (the verified identity, which a new `access_token` replaces in
/// place), where its frames go, and what it listens to.
struct RealtimeSubscriber: Sendable {
    let socketID: UUID
    let outbox: RealtimeOutbox
    let version: RealtimeVersion
    let topic: String
    let joinRef: String?
    let appID: UUID
    var identity: RequestIdentity
    /// The session of a signed-in subscriber (checked for revocation), and when its token expires.
    var sessionID: UUID?
    var expiresAt: Int?
    /// The bindings that passed validation (the others got a `system` error at join).
    var bindings: [ChannelBinding] = []
    /// Whether the sender gets its own broadcasts back (`config.broadcast.self`), and an ok for each (`ack`).
    let broadcastSelf: Bool
    let broadcastAck: Bool
    /// The presence key, when the channel tracks presence.
    let presenceKey: String?

    /// Channels with the same key see exactly the same rows: one visibility check serves them all.
    var identityKey: String { self.identity.role.rawValue + "\u{0}" + self.identity.claimsJSON }

    /// The channel name, as `system` messages carry it.
    var channelName: String { RealtimeTopic.channelName(of: self.topic) }
}

/// Every joined channel of this process's sockets, and the counts the connection limits need. The change feed reads
/// a copy per poll; sockets add, change and remove their own channels. A lock, not an actor: the feed's fan-out and
/// the sockets' joins never wait on each other for more than a dictionary update.
final class RealtimeHub: Sendable {
    private struct ChannelKey: Hashable {
        let socketID: UUID
        let topic: String
    }

    private struct State {
        var channels: [ChannelKey: RealtimeSubscriber] = [:]
        var socketsPerAddress: [String: Int] = [:]
        var socketsPerApp: [UUID: Int] = [:]
        var sockets: [UUID: RealtimeSocket] = [:]

        /// The gauges of open sockets and channels, from these counts (called under the lock, after each change).
        func recordOpen() { RealtimeMetrics.open(sockets: self.sockets.count, channels: self.channels.count) }
    }

    private let state = NIOLockedValueBox(State())
    let limits: RealtimeSocketLimits

    init(limits: RealtimeSocketLimits) {
        self.limits = limits
    }

    // MARK: Sockets

    /// Admits a new socket unless its address or app already holds the most sockets allowed; returns the refusal.
    func admit(_ socket: RealtimeSocket) -> String? {
        let address = socket.address
        let app = socket.grant.appID
        return self.state.withLockedValue { state -> String? in
            if state.socketsPerAddress[address, default: 0] >= self.limits.socketsPerAddress {
                return "Too many connections from this address"
            }
            if state.socketsPerApp[app, default: 0] >= self.limits.socketsPerApp { return "Too many connections for this app" }
            state.socketsPerAddress[address, default: 0] += 1
            state.socketsPerApp[app, default: 0] += 1
            state.sockets[socket.id] = socket
            state.recordOpen()
            return nil
        }
    }

    /// The sockets open now (the console's health page).
    var socketCount: Int { self.state.withLockedValue { $0.sockets.count } }

    /// Whether `admit` would refuse a socket from `address` for `app` now (checked before the upgrade, so the
    /// refusal can be an HTTP 429; `admit` checks again).
    func wouldRefuse(address: String, app: UUID) -> Bool {
        self.state.withLockedValue { state in
            state.socketsPerAddress[address, default: 0] >= self.limits.socketsPerAddress
                || state.socketsPerApp[app, default: 0] >= self.limits.socketsPerApp
        }
    }

    /// Forgets a socket and every channel it had joined; returns those channels (for presence leaves).
    @discardableResult
    func release(socketID: UUID, address: String, app: UUID) -> [RealtimeSubscriber] {
        self.state.withLockedValue { state in
            state.socketsPerAddress[address, default: 1] -= 1
            if state.socketsPerAddress[address] == 0 { state.socketsPerAddress[address] = nil }
            state.socketsPerApp[app, default: 1] -= 1
            if state.socketsPerApp[app] == 0 { state.socketsPerApp[app] = nil }
            state.sockets[socketID] = nil
            let keys = state.channels.keys.filter { $0.socketID == socketID }
            let released = keys.compactMap { state.channels.removeValue(forKey: $0) }
            state.recordOpen()
            RealtimeMetrics.channelsClosed(released.count, reason: "socket")
            return released
        }
    }

    /// Ends every socket's queue (server shutdown): each writer sends what it has and closes with 1001.
    func finishAll() {
        let sockets = self.state.withLockedValue { Array($0.sockets.values) }
        for socket in sockets { socket.outbox.finish(.normal) }
    }

    /// The open socket with this id.
    func socket(_ id: UUID) -> RealtimeSocket? { self.state.withLockedValue { $0.sockets[id] } }

    /// The sockets that have sent nothing for longer than `timeout`.
    func idle(longerThan timeout: Duration) -> [RealtimeSocket] {
        let now = ContinuousClock.now
        let sockets = self.state.withLockedValue { Array($0.sockets.values) }
        return sockets.filter { $0.lastSeen.withLockedValue { $0 }.duration(to: now) > timeout }
    }

    // MARK: Channels

    /// Adds (or replaces) a socket's channel.
    func join(_ subscriber: RealtimeSubscriber) {
        self.state.withLockedValue { state in
            state.channels[ChannelKey(socketID: subscriber.socketID, topic: subscriber.topic)] = subscriber
            state.recordOpen()
        }
    }

    /// Removes a socket's channel on `topic`, only when it is the join `joinRef` names if given; returns it. `reason`
    /// labels the channel's end in the metrics (`RealtimeMetrics.channelsClosed`).
    @discardableResult
    func leave(socketID: UUID, topic: String, joinRef: String?? = .none, reason: String) -> RealtimeSubscriber? {
        self.state.withLockedValue { state in
            let key = ChannelKey(socketID: socketID, topic: topic)
            guard let channel = state.channels[key] else { return nil }
            if case .some(let expected) = joinRef, channel.joinRef != expected { return nil }
            state.channels[key] = nil
            state.recordOpen()
            RealtimeMetrics.channelsClosed(1, reason: reason)
            return channel
        }
    }

    /// A socket's channel on `topic`.
    func channel(socketID: UUID, topic: String) -> RealtimeSubscriber? {
        self.state.withLockedValue { $0.channels[ChannelKey(socketID: socketID, topic: topic)] }
    }

    /// Changes a joined channel in place (a new token, validated bindings); false when it is no longer joined.
    @discardableResult
    func update(socketID: UUID, topic: String, joinRef: String?, _ change: (inout RealtimeSubscriber) -> Void) -> Bool {
        self.state.withLockedValue { state in
            let key = ChannelKey(socketID: socketID, topic: topic)
            guard var subscriber = state.channels[key], subscriber.joinRef == joinRef else { return false }
            change(&subscriber)
            state.channels[key] = subscriber
            return true
        }
    }

    /// How many channels a socket has joined.
    func channelCount(socketID: UUID) -> Int {
        self.state.withLockedValue { $0.channels.keys.count { $0.socketID == socketID } }
    }

    /// Every joined channel, as of now.
    var subscribers: [RealtimeSubscriber] { self.state.withLockedValue { Array($0.channels.values) } }

    /// The channels joined on `topic` of `app` (broadcast and presence are scoped to one app).
    func subscribers(app: UUID, topic: String) -> [RealtimeSubscriber] {
        self.state.withLockedValue { state in state.channels.values.filter { $0.appID == app && $0.topic == topic } }
    }

    /// Whether any channel listens to row changes (the feed polls faster then).
    var hasBindings: Bool { self.state.withLockedValue { state in state.channels.values.contains { !$0.bindings.isEmpty } } }
}
