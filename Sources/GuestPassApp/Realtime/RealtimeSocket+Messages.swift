import Foundation
import GuestPassJSON
import GuestPassStore
import Logging
import RealtimeProtocol

extension RealtimeSocket {
    /// A user broadcast (text push or v2 binary kind 3): written to the change log, so the sockets of every replica
    /// on the topic of this app get it from their change feed (the sender too only with `broadcast.self`); with
    /// `broadcast.ack` the push is answered ok once the log holds it.
    func broadcast(topic: String, joinRef: String?, ref: String?, event: String, payload: RealtimeJSON) async {
        let answer = { (reply: RealtimeJSON) in
            guard ref != nil else { return }
            self.send(joinRef: joinRef, ref: ref, topic: topic, event: "phx_reply", payload: reply)
        }
        guard let channel = self.hub.channel(socketID: self.id, topic: topic) else {
            return answer(RealtimePayload.replyError(reason: "unmatched topic"))
        }
        guard payload.text.utf8.count <= self.services.limits.maxBroadcastBytes else {
            RealtimeMetrics.refused("broadcast_size")
            return answer(RealtimePayload.replyError(reason: "payload_size_exceeded"))
        }
        guard self.countBroadcast(bytes: payload.text.utf8.count) else {
            RealtimeMetrics.refused("broadcast_rate")
            return answer(RealtimePayload.replyError(reason: "rate_limited: too many broadcast bytes per second"))
        }
        do {
            try await self.services.feed.broadcast(app: channel.appID, topic: topic, event: event, payload: payload.text, origin: self.id)
            RealtimeMetrics.broadcastSent()
            if channel.broadcastAck { answer(RealtimePayload.reply(.ok)) }
        } catch {
            self.logger.error("realtime: broadcast failed", metadata: ["error": "\(error)"])
            answer(RealtimePayload.replyError(reason: "broadcast failed; try again"))
        }
    }

    /// `presence` pushes: `track` with a meta object, `untrack`; both answered ok (or error) to the push.
    func presence(_ message: RealtimeMessage) async {
        guard let channel = self.hub.channel(socketID: self.id, topic: message.topic) else {
            return self.reply(message, RealtimePayload.replyError(reason: "unmatched topic"))
        }
        let payload = message.payload.objectValue
        do {
            switch payload?["event"]?.stringValue {
            case "track":
                let meta = payload?["payload"] ?? .object([:])
                guard case .object = meta, meta.jsonText.utf8.count <= self.services.limits.maxBroadcastBytes else {
                    return self.reply(message, RealtimePayload.replyError(reason: "presence payload must be an object"))
                }
                try await self.services.presence.track(channel, metaJSON: meta.jsonText)
            case "untrack":
                try await self.services.presence.untrack(channel)
            default:
                return self.reply(message, RealtimePayload.replyError(reason: "presence event must be track or untrack"))
            }
            self.reply(message, RealtimePayload.reply(.ok))
        } catch {
            self.logger.error("realtime: presence failed", metadata: ["error": "\(error)"])
            self.reply(message, RealtimePayload.replyError(reason: "presence failed; try again"))
        }
    }
}
