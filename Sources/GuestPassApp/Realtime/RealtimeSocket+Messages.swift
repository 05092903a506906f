import Foundation
import GuestPassJSON
import GuestPassStore
import Logging
import RealtimeProtocol

extension RealtimeSocket {
    /// A user broadcast (text push or v2 binary kind 3): written to the change log, so the sockets of every replica
    /// on the topic of this app get it from their change feed (the sender too only with `broadcast.self`); with
    /// `broadcast.ack` the push is answered ok once the log holds it.
    func broadcast(topic: String, joinRef: String?, ref: String?, event: String, payloadJSON: String) async {
        let answer = { (status: String, response: String) in
            guard ref != nil else { return }
            self.send(
                joinRef: joinRef, ref: ref, topic: topic, event: "phx_reply",
                payloadJSON: RealtimePayloads.reply(status: status, responseJSON: response))
        }
        guard let channel = self.hub.channel(socketID: self.id, topic: topic) else {
            return answer("error", RealtimePayloads.reason("unmatched topic"))
        }
        guard payloadJSON.utf8.count <= self.services.limits.maxBroadcastBytes else {
            RealtimeMetrics.refused("broadcast_size")
            return answer("error", RealtimePayloads.reason("payload_size_exceeded"))
        }
        do {
            try await self.services.feed.broadcast(app: channel.appID, topic: topic, event: event, payload: payloadJSON, origin: self.id)
            RealtimeMetrics.broadcastSent()
            if channel.broadcastAck { answer("ok", "{}") }
        } catch {
            self.logger.error("realtime: broadcast failed", metadata: ["error": "\(error)"])
            answer("error", RealtimePayloads.reason("broadcast failed; try again"))
        }
    }

    /// `presence` pushes: `track` with a meta object, `untrack`; both answered ok (or error) to the push.
    func presence(_ message: RealtimeMessage) async {
        guard let channel = self.hub.channel(socketID: self.id, topic: message.topic) else {
            return self.reply(message, status: "error", response: RealtimePayloads.reason("unmatched topic"))
        }
        let payload = message.payload.objectValue
        do {
            switch payload?["event"]?.stringValue {
            case "track":
                let meta = payload?["payload"] ?? .object([:])
                guard case .object = meta, meta.jsonText.utf8.count <= self.services.limits.maxBroadcastBytes else {
                    return self.reply(message, status: "error", response: RealtimePayloads.reason("presence payload must be an object"))
                }
                try await self.services.presence.track(channel, metaJSON: meta.jsonText)
            case "untrack":
                try await self.services.presence.untrack(channel)
            default:
                return self.reply(message, status: "error", response: RealtimePayloads.reason("presence event must be track or untrack"))
            }
            self.reply(message, status: "ok", response: "{}")
        } catch {
            self.logger.error("realtime: presence failed", metadata: ["error": "\(error)"])
            self.reply(message, status: "error", response: RealtimePayloads.reason("presence failed; try again"))
        }
    }
}
