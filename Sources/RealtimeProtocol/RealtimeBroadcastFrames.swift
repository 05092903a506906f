public import GuestPassJSON

/// A broadcast's own payload: JSON text, or bytes the sender marked binary.
public enum RealtimeBroadcastPayload: Sendable, Equatable, Hashable {
    /// JSON (encoding byte 1). Inbound, it was checked by the strict parser and is kept as the text received, so it is
    /// forwarded without being parsed or written again.
    case json(RealtimeJSON)
    /// Opaque bytes (encoding byte 0); the server refuses them (no framing of v1 carries them).
    case binary([UInt8])
}

/// A user broadcast push: binary frame kind 3, sent by supabase-js for every `broadcast` push whose payload has a
/// string `event`, and by supabase-swift's `broadcast(event:)`, on v2 sockets.
///
/// Layout: 1 byte kind (3); 1 byte each for the lengths of join_ref, ref, topic, user event, metadata; 1 byte payload
/// encoding (0 binary, 1 JSON); then join_ref, ref, topic, event, metadata (JSON, may be empty) and the payload, which
/// runs to the end of the frame. Strings must be valid UTF-8. A zero-length join_ref or ref is nil (the clients write
/// `""` for a missing ref); zero-length metadata is nil. The whole frame is at most `RealtimeLimits.maxFrameBytes`.
public struct RealtimeBroadcastPush: Sendable, Equatable {
    /// The ref of the channel's join (nil when empty).
    public var joinRef: String?
    /// The push's ref, for the `ack` reply (nil when empty).
    public var ref: String?
    /// `realtime:<channel>`.
    public var topic: String
    /// The user's event name (`cursor`, `message`…); the Phoenix event is implicitly `broadcast`.
    public var event: String
    /// The metadata the client attached (JSON), nil when none.
    public var metadata: JSONValue?
    /// The payload.
    public var payload: RealtimeBroadcastPayload

    /// Makes a push (tests, and a server that builds one itself).
    public init(
        joinRef: String?, ref: String?, topic: String, event: String, metadata: JSONValue? = nil, payload: RealtimeBroadcastPayload
    ) {
        self.joinRef = joinRef
        self.ref = ref
        self.topic = topic
        self.event = event
        self.metadata = metadata
        self.payload = payload
    }

    /// The frame's kind byte.
    static let kind: UInt8 = 3

    /// Decodes a whole frame (its size already checked).
    static func decode(_ bytes: [UInt8], limits: RealtimeLimits) throws(RealtimeProtocolError) -> RealtimeBroadcastPush {
        guard let kind = bytes.first else { throw RealtimeProtocolError(.truncatedBinary, "empty binary frame") }
        guard kind == Self.kind else {
            throw RealtimeProtocolError(.unknownBinaryKind, "binary frame of kind \(kind): only kind 3 (user broadcast push) is accepted")
        }
        let headerLength = 7
        guard bytes.count >= headerLength else {
            throw RealtimeProtocolError(.truncatedBinary, "binary frame of \(bytes.count) bytes is shorter than its 7-byte header")
        }
        let lengths = (1...5).map { Int(bytes[$0]) }
        let encoding = bytes[6]
        guard encoding <= 1 else {
            throw RealtimeProtocolError(.unknownPayloadEncoding, "payload encoding \(encoding): expected 0 (binary) or 1 (JSON)")
        }
        let stringsEnd = headerLength + lengths.reduce(0, +)
        guard bytes.count >= stringsEnd else {
            throw RealtimeProtocolError(
                .truncatedBinary, "binary frame of \(bytes.count) bytes ends before its header's lengths (\(stringsEnd) bytes)")
        }
        var offset = headerLength
        var fields: [ArraySlice<UInt8>] = []
        for length in lengths {
            fields.append(bytes[offset..<offset + length])
            offset += length
        }
        let names = ["join_ref", "ref", "topic", "event"]
        var strings: [String] = []
        for (index, name) in names.enumerated() {
            guard let text = String(validating: fields[index], as: UTF8.self) else {
                throw RealtimeProtocolError(.invalidUTF8, "the binary frame's \(name) is not valid UTF-8")
            }
            strings.append(text)
        }
        let metadata: JSONValue? = fields[4].isEmpty ? nil : try JSONReading.parse(fields[4], limits: limits)
        let body = bytes[stringsEnd...]
        let payload: RealtimeBroadcastPayload
        if encoding == 1 {
            _ = try JSONReading.parse(body, limits: limits)
            // The parser accepts only valid UTF-8, so the text is the bytes received.
            payload = .json(RealtimeJSON(unchecked: String(decoding: body, as: UTF8.self)))
        } else {
            payload = .binary(Array(body))
        }
        return RealtimeBroadcastPush(
            joinRef: strings[0].isEmpty ? nil : strings[0], ref: strings[1].isEmpty ? nil : strings[1], topic: strings[2],
            event: strings[3], metadata: metadata, payload: payload)
    }
}
