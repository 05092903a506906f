import Foundation
import GuestPassCrypto
import GuestPassJSON
import GuestPassPostgres
import GuestPassStore
import Logging
import NIOConcurrencyHelpers
import RealtimeProtocol

/// One client's socket: reads its messages in order and answers them (join, leave, heartbeat, token refresh,
/// broadcast, presence). Everything it sends goes through its `RealtimeOutbox`; the change feed writes to the same
/// outbox from outside. An actor, so a socket's messages are handled one at a time, in the order they came.
actor RealtimeSocket {
    let id = UUID()
    let version: RealtimeVersion
    /// Reads the client's frames in the socket's framing (strict JSON, 1 MiB, bounded depth).
    let decoder: RealtimeDecoder
    let apiKey: String
    let grant: APIKeyGrant
    let address: String
    let outbox: RealtimeOutbox
    let services: RealtimeServices
    let logger: Logger
    private var messageWindow = (start: ContinuousClock.now, count: 0)
    private var broadcastBucket: (at: ContinuousClock.Instant, bytes: Double)
    /// When the client last sent anything (read by the idle check without waiting for the actor).
    nonisolated let lastSeen = NIOLockedValueBox(ContinuousClock.now)

    init(version: RealtimeVersion, apiKey: String, grant: APIKeyGrant, address: String, services: RealtimeServices, logger: Logger) {
        self.version = version
        self.decoder = RealtimeDecoder(version: version)
        self.apiKey = apiKey
        self.grant = grant
        self.address = address
        self.services = services
        self.logger = logger
        self.outbox = RealtimeOutbox(maxFrames: services.limits.outboxFrames, maxBytes: services.limits.outboxBytes)
        self.broadcastBucket = (ContinuousClock.now, Double(services.limits.broadcastBurstBytes))
    }

    var hub: RealtimeHub { self.services.hub }

    // MARK: Inbound

    /// Handles one WebSocket message; a malformed one closes the socket (1007), as a Phoenix socket does.
    func receive(text: String) async {
        guard self.countMessage() else { return }
        let message: RealtimeMessage
        do {
            message = try self.decoder.decode(text: text)
        } catch {
            self.outbox.finish(.policy("Malformed message: \(error)"))
            return
        }
        await self.handle(message)
    }

    /// Handles a binary message (v2 only: a user broadcast push, kind 3).
    func receive(binary: [UInt8]) async {
        guard self.countMessage() else { return }
        guard self.version == .v2, let push = try? self.decoder.decode(binary: binary) else {
            self.outbox.finish(.policy("Malformed binary message"))
            return
        }
        guard case .json(let payload) = push.payload else {
            // Binary payloads are not relayed yet (the change log holds JSON); say so to the pusher.
            if push.ref != nil {
                self.send(
                    RealtimeOutboundMessage.reply(
                        to: push, payload: RealtimePayload.replyError(reason: "binary broadcast payloads are not supported")))
            }
            return
        }
        await self.broadcast(topic: push.topic, joinRef: push.joinRef, ref: push.ref, event: push.event, payload: payload)
    }

    /// Takes a broadcast's bytes from the socket's token bucket; false when it holds too few.
    func countBroadcast(bytes: Int) -> Bool {
        let now = ContinuousClock.now
        let elapsed = self.broadcastBucket.at.duration(to: now)
        let refill =
            (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            * Double(self.services.limits.broadcastBytesPerSecond)
        let available = min(Double(self.services.limits.broadcastBurstBytes), self.broadcastBucket.bytes + refill)
        guard available >= Double(bytes) else {
            self.broadcastBucket = (now, available)
            return false
        }
        self.broadcastBucket = (now, available - Double(bytes))
        return true
    }

    private func countMessage() -> Bool {
        let now = ContinuousClock.now
        self.lastSeen.withLockedValue { $0 = now }
        if self.messageWindow.start.duration(to: now) >= .seconds(1) { self.messageWindow = (now, 0) }
        self.messageWindow.count += 1
        guard self.messageWindow.count <= self.services.limits.messagesPerSecond else {
            RealtimeMetrics.refused("messages_per_second")
            self.outbox.finish(.policy("Too many messages per second"))
            return false
        }
        return true
    }

    private func handle(_ message: RealtimeMessage) async {
        switch (message.topic, message.event) {
        case ("phoenix", "heartbeat"):
            self.reply(message, RealtimePayload.reply(.ok))
        case (_, "phx_join"):
            await self.join(message)
        case (_, "phx_leave"):
            await self.leave(message)
        case (_, "access_token"):
            await self.refreshToken(message)
        case (_, "broadcast"):
            let payload = message.payload.objectValue
            guard let event = payload?["event"]?.stringValue else {
                self.reply(message, RealtimePayload.replyError(reason: "broadcast needs an event"))
                return
            }
            await self.broadcast(
                topic: message.topic, joinRef: message.joinRef, ref: message.ref, event: event,
                payload: RealtimeJSON(payload?["payload"] ?? .object([:])))
        case (_, "presence"):
            await self.presence(message)
        default:
            // Realtime ignores client events it does not know; a push to a topic not joined gets Phoenix's answer.
            if self.hub.channel(socketID: self.id, topic: message.topic) == nil {
                self.reply(message, RealtimePayload.replyError(reason: "unmatched topic"))
            }
        }
    }

    // MARK: Sending

    /// Queues a message for the client in its framing.
    func send(_ message: RealtimeOutboundMessage) {
        self.outbox.enqueue(message.frame(for: self.version), farewell: self.tooSlow(topic: message.topic, joinRef: message.joinRef))
    }

    /// The `system` error a socket gets last when its queue overflows (built only then).
    func tooSlow(topic: String, joinRef: String?) -> RealtimeFrame {
        RealtimeOutboundMessage(
            joinRef: joinRef, ref: nil, topic: topic, event: "system",
            payload: RealtimePayload.system(
                .system, .error, message: "Too many messages queued: the client is too slow", channel: RealtimeTopic.channelName(of: topic))
        ).frame(for: self.version)
    }

    /// Queues a message for the client in its framing.
    func send(joinRef: String?, ref: String?, topic: String, event: String, payload: RealtimeJSON) {
        self.send(RealtimeOutboundMessage(joinRef: joinRef, ref: ref, topic: topic, event: event, payload: payload))
    }

    /// `phx_reply` to `message` with `payload` (`RealtimePayload.reply`, `replyError`, `joinReply`).
    func reply(_ message: RealtimeMessage, _ payload: RealtimeJSON) {
        self.send(RealtimeOutboundMessage.reply(to: message, payload: payload))
    }

    /// Ends a channel on the server's initiative: a `system` error naming why, then `phx_close`, as Realtime does
    /// (`shutdown_response`); the client does not rejoin on its own.
    func shutDown(topic: String, joinRef: String?, reason: String) async {
        guard let subscriber = self.hub.leave(socketID: self.id, topic: topic, joinRef: .some(joinRef), reason: "shutdown") else { return }
        self.send(
            joinRef: joinRef, ref: nil, topic: topic, event: "system",
            payload: RealtimePayload.system(.system, .error, message: reason, channel: subscriber.channelName))
        self.send(RealtimeOutboundMessage.close(topic: topic, joinRef: joinRef))
        await self.services.presence.leaveAll(of: subscriber)
    }

    /// Called when the socket is gone: forgets its channels and their presence.
    func closed() async {
        let channels = self.hub.release(socketID: self.id, address: self.address, app: self.grant.appID)
        for channel in channels { await self.services.presence.leaveAll(of: channel) }
    }
}
