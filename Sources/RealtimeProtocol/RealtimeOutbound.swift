import GuestPassCrypto

/// One WebSocket frame, ready to send: text or binary. Built once and sent to every socket that should receive the
/// same bytes (a change on one channel, a broadcast): `String` and `Array` share their storage when copied.
public enum RealtimeFrame: Sendable, Equatable, Hashable {
    /// A text frame (UTF-8).
    case text(String)
    /// A binary frame.
    case binary([UInt8])

    /// The frame's size in bytes (UTF-8 for text), for bounding a socket's outbound queue; O(1).
    public var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let bytes): bytes.count
        }
    }
}

/// A message the server sends: a reply, a push (`system`, `postgres_changes`, `broadcast`, `presence_state`,
/// `presence_diff`, `phx_close`, `phx_error`), whose payload is already-serialised JSON (`RealtimeJSON`, embedded
/// verbatim: rows as the database wrote them are never parsed again).
///
/// `frame(for:)` writes:
/// - v1: `{"topic":…,"event":…,"payload":<payload>,"ref":…}` and `"join_ref":…` after it only when `joinRef` is set.
///   `ref` is always written, `null` for pushes: Phoenix's v1 encoder writes it, and supabase-py (2.34) validates every
///   server frame with pydantic models that require the key, dropping a frame without it.
/// - v2: `[join_ref,ref,topic,event,<payload>]`, nil refs as JSON `null`.
///
/// Strings are JSON-escaped (`"`, `\`, control characters; other characters as UTF-8).
public struct RealtimeOutboundMessage: Sendable, Equatable {
    /// The channel's join ref (replies echo the request's; `phx_close` carries the join's; most pushes have none).
    public var joinRef: String?
    /// The ref of the message answered (replies), or nil (pushes).
    public var ref: String?
    /// `realtime:<channel>`, or `phoenix` for heartbeat replies.
    public var topic: String
    /// `phx_reply`, `system`, `postgres_changes`, `broadcast`, `presence_state`, `presence_diff`, `phx_close`, `phx_error`…
    public var event: String
    /// The payload (one JSON value; clients expect an object).
    public var payload: RealtimeJSON

    /// Makes a message.
    public init(joinRef: String?, ref: String?, topic: String, event: String, payload: RealtimeJSON) {
        self.joinRef = joinRef
        self.ref = ref
        self.topic = topic
        self.event = event
        self.payload = payload
    }

    /// The `phx_reply` to `message`: same join ref, ref and topic, payload `{"status":…,"response":…}` (build it with
    /// `RealtimePayload.reply`, `replyError` or `joinReply`). A heartbeat's reply is
    /// `reply(to: heartbeat, payload: RealtimePayload.reply(.ok))`.
    public static func reply(to message: RealtimeMessage, payload: RealtimeJSON) -> RealtimeOutboundMessage {
        RealtimeOutboundMessage(joinRef: message.joinRef, ref: message.ref, topic: message.topic, event: "phx_reply", payload: payload)
    }

    /// The `phx_reply` to a kind-3 broadcast push (its `ack`): same join ref, ref and topic.
    public static func reply(to push: RealtimeBroadcastPush, payload: RealtimeJSON) -> RealtimeOutboundMessage {
        RealtimeOutboundMessage(joinRef: push.joinRef, ref: push.ref, topic: push.topic, event: "phx_reply", payload: payload)
    }

    /// `phx_close` on the channel joined with `joinRef`: join_ref and ref both the join's ref, payload `{}` (Phoenix's
    /// shape: the channel ended on purpose and clients do not rejoin; supabase-swift ignores one whose join_ref is stale).
    public static func close(topic: String, joinRef: String?) -> RealtimeOutboundMessage {
        RealtimeOutboundMessage(joinRef: joinRef, ref: joinRef, topic: topic, event: "phx_close", payload: .emptyObject)
    }

    /// `phx_error` on the channel joined with `joinRef`, shaped as `close`: the channel failed and clients rejoin with
    /// back-off.
    public static func channelError(topic: String, joinRef: String?) -> RealtimeOutboundMessage {
        RealtimeOutboundMessage(joinRef: joinRef, ref: joinRef, topic: topic, event: "phx_error", payload: .emptyObject)
    }

    /// The text frame of this message in `version`'s framing.
    public func frame(for version: RealtimeVersion) -> RealtimeFrame {
        .text(self.text(for: version))
    }

    /// The frame's text in `version`'s framing.
    public func text(for version: RealtimeVersion) -> String {
        var text = ""
        text.reserveCapacity(self.payload.text.utf8.count + self.topic.utf8.count + self.event.utf8.count + 64)
        switch version {
        case .v1:
            text.append("{\"topic\":")
            JSONString.append(self.topic, to: &text)
            text.append(",\"event\":")
            JSONString.append(self.event, to: &text)
            text.append(",\"payload\":")
            text.append(self.payload.text)
            text.append(",\"ref\":")
            JSONText.appendOptionalString(self.ref, to: &text)
            if let joinRef = self.joinRef {
                text.append(",\"join_ref\":")
                JSONString.append(joinRef, to: &text)
            }
            text.append("}")
        case .v2:
            text.append("[")
            JSONText.appendOptionalString(self.joinRef, to: &text)
            text.append(",")
            JSONText.appendOptionalString(self.ref, to: &text)
            text.append(",")
            JSONString.append(self.topic, to: &text)
            text.append(",")
            JSONString.append(self.event, to: &text)
            text.append(",")
            text.append(self.payload.text)
            text.append("]")
        }
        return text
    }
}
