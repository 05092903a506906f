import GuestPassJSON
import RealtimeProtocol

/// The few calls the socket makes into `RealtimeProtocol`, in one place: decode a client's frame, encode a message
/// in the socket's framing, and the payloads the server sends.
enum RealtimeCodec {
    /// A text frame in `version`'s framing.
    static func decode(text: String, version: RealtimeVersion) throws -> RealtimeMessage {
        try RealtimeDecoder(version: version).decode(text: text)
    }

    /// A v2 binary frame (a user broadcast push).
    static func decodeBroadcastPush(_ bytes: [UInt8]) throws -> RealtimeBroadcastPush {
        try RealtimeDecoder(version: .v2).decode(binary: bytes)
    }

    /// The text of a message in `version`'s framing; `payloadJSON` is embedded verbatim.
    static func encode(joinRef: String?, ref: String?, topic: String, event: String, payloadJSON: String, version: RealtimeVersion) -> String {
        RealtimeOutboundMessage(joinRef: joinRef, ref: ref, topic: topic, event: event, payload: RealtimeJSON(unchecked: payloadJSON))
            .text(for: version)
    }
}

/// The payloads of the server's messages, as JSON text.
enum RealtimePayloads {
    private static func string(_ text: String) -> String { JSONValue.string(text).jsonText }

    /// `{"status":…,"response":…}` of a `phx_reply`.
    static func reply(status: String, responseJSON: String) -> String {
        "{\"status\":" + self.string(status) + ",\"response\":" + responseJSON + "}"
    }

    /// `{"reason":…}`: the response of an error reply.
    static func reason(_ text: String) -> String { "{\"reason\":" + self.string(text) + "}" }

    /// The join reply's response: every binding echoed as sent, in order, with its id.
    static func joinResponse(_ bindings: [RealtimeBinding]) -> String {
        "{\"postgres_changes\":[" + bindings.map(\.echo.text).joined(separator: ",") + "]}"
    }

    /// A `system` message.
    static func system(extension name: String, status: String, message: String, channel: String) -> String {
        "{\"extension\":" + self.string(name) + ",\"status\":" + self.string(status) + ",\"message\":" + self.string(message)
            + ",\"channel\":" + self.string(channel) + "}"
    }

    /// A `postgres_changes` event: the ids of the channel's bindings it passed, and the change.
    static func postgresChanges(ids: [Int], dataJSON: String) -> String {
        "{\"ids\":[" + ids.map(String.init).joined(separator: ",") + "],\"data\":" + dataJSON + "}"
    }

    /// A broadcast as receivers get it.
    static func broadcast(event: String, payloadJSON: String) -> String {
        "{\"type\":\"broadcast\",\"event\":" + self.string(event) + ",\"payload\":" + payloadJSON + "}"
    }
}
