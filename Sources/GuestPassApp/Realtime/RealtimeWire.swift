import RealtimeProtocol

/// The few codec calls the socket makes into `RealtimeProtocol`, in one place: decode a client's frame, encode a
/// message in the socket's framing (the payloads' shapes are `RealtimePayload`'s).
enum RealtimeCodec {
    /// A text frame in `version`'s framing.
    static func decode(text: String, version: RealtimeVersion) throws -> RealtimeMessage {
        try RealtimeDecoder(version: version).decode(text: text)
    }

    /// A v2 binary frame (a user broadcast push).
    static func decodeBroadcastPush(_ bytes: [UInt8]) throws -> RealtimeBroadcastPush {
        try RealtimeDecoder(version: .v2).decode(binary: bytes)
    }

    /// The text of a message in `version`'s framing; `payload` is embedded verbatim.
    static func encode(joinRef: String?, ref: String?, topic: String, event: String, payload: RealtimeJSON, version: RealtimeVersion) -> String {
        RealtimeOutboundMessage(joinRef: joinRef, ref: ref, topic: topic, event: event, payload: payload).text(for: version)
    }
}
