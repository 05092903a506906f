public import GuestPassJSON

/// A message a client sent in a text frame, in either framing: `heartbeat`, `phx_join`, `phx_leave`, `access_token`,
/// `broadcast`, `presence`, or anything else (Realtime ignores unknown events; so may the server).
public struct RealtimeMessage: Sendable, Equatable {
    /// The ref of the join this message belongs to (nil for `heartbeat`, and for refs sent as null or absent).
    public var joinRef: String?
    /// The message's own ref, which a reply echoes (nil when sent as null or absent: supabase-py's heartbeats).
    public var ref: String?
    /// `realtime:<channel>`, or `phoenix` for heartbeats.
    public var topic: String
    /// The event name, as sent (`phx_join`, `heartbeat`…).
    public var event: String
    /// The payload, parsed (any JSON value; clients send objects).
    public var payload: JSONValue

    /// Makes a message (tests, and a server that builds one itself).
    public init(joinRef: String?, ref: String?, topic: String, event: String, payload: JSONValue) {
        self.joinRef = joinRef
        self.ref = ref
        self.topic = topic
        self.event = event
        self.payload = payload
    }
}

/// Decodes a socket's inbound frames in the framing of its `RealtimeVersion`, within `RealtimeLimits`. One per socket;
/// a value with no state, so it may be copied and shared freely.
///
/// Text frames (`decode(text:)`):
/// - v1: a JSON object with `topic` (string), `event` (string), `payload` (any JSON, required as Phoenix requires it),
///   `ref` and `join_ref` (string, null or absent); other members are ignored.
/// - v2: a JSON array of exactly five elements `[join_ref, ref, topic, event, payload]`, refs string or null.
///
/// Refs are strings or null only: a number (`"ref": 1`) is `invalidField`. No official client sends one, and turning
/// it into the string `"1"` would echo a different JSON type in the reply, which a client comparing refs strictly
/// would silently never match; a clear refusal is easier to diagnose.
///
/// Binary frames (`decode(binary:)`) exist only on v2 sockets and only of kind 3 (see `RealtimeBroadcastPush`).
public struct RealtimeDecoder: Sendable {
    /// The socket's framing.
    public let version: RealtimeVersion
    /// The bounds every frame is held to.
    public let limits: RealtimeLimits

    /// A decoder for a socket of `version`.
    public init(version: RealtimeVersion, limits: RealtimeLimits = .standard) {
        self.version = version
        self.limits = limits
    }

    /// The message of a text frame.
    ///
    /// - Throws: `frameTooLarge`, `invalidJSON` (including too deep or too many values), `invalidFraming` (an array on a
    ///   v1 socket, an object on a v2 one, an array of another length), `invalidField` (wrong member types, missing
    ///   `topic`/`event`/`payload`).
    public func decode(text: String) throws(RealtimeProtocolError) -> RealtimeMessage {
        try self.decode(textUTF8: text.utf8)
    }

    /// The message of a text frame given as its UTF-8 bytes (validated here: invalid UTF-8 is `invalidJSON`).
    public func decode(textUTF8 bytes: some Collection<UInt8>) throws(RealtimeProtocolError) -> RealtimeMessage {
        let document = try JSONReading.parse(bytes, limits: self.limits)
        switch (self.version, document) {
        case (.v1, .object(let members)):
            return try Self.objectMessage(members)
        case (.v2, .array(let elements)):
            return try Self.arrayMessage(elements)
        case (.v1, _):
            throw RealtimeProtocolError(.invalidFraming, "expected a JSON object {\"topic\",\"event\",\"payload\",\"ref\"} (vsn 1.0.0)")
        case (.v2, _):
            throw RealtimeProtocolError(.invalidFraming, "expected a JSON array [join_ref, ref, topic, event, payload] (vsn 2.0.0)")
        }
    }

    /// The user broadcast push of a binary frame (kind 3), on a v2 socket.
    ///
    /// - Throws: `unknownBinaryKind` on a v1 socket or for any kind but 3, `frameTooLarge`, `truncatedBinary`,
    ///   `invalidUTF8`, `unknownPayloadEncoding`, `invalidJSON` (metadata, or a payload marked JSON).
    public func decode(binary bytes: some Collection<UInt8>) throws(RealtimeProtocolError) -> RealtimeBroadcastPush {
        guard self.version == .v2 else {
            throw RealtimeProtocolError(.unknownBinaryKind, "binary frames need vsn 2.0.0")
        }
        guard bytes.count <= self.limits.maxFrameBytes else {
            throw RealtimeProtocolError(
                .frameTooLarge, "frame of \(bytes.count) bytes is larger than the limit of \(self.limits.maxFrameBytes) bytes")
        }
        return try RealtimeBroadcastPush.decode(Array(bytes), limits: self.limits)
    }

    // MARK: Framings

    private static func objectMessage(_ members: [String: JSONValue]) throws(RealtimeProtocolError) -> RealtimeMessage {
        guard let topic = members["topic"] else { throw RealtimeProtocolError(.invalidField, "the message has no \"topic\"") }
        guard let event = members["event"] else { throw RealtimeProtocolError(.invalidField, "the message has no \"event\"") }
        guard let payload = members["payload"] else { throw RealtimeProtocolError(.invalidField, "the message has no \"payload\"") }
        return RealtimeMessage(
            joinRef: try Self.ref(members["join_ref"], name: "join_ref"), ref: try Self.ref(members["ref"], name: "ref"),
            topic: try Self.string(topic, name: "topic"), event: try Self.string(event, name: "event"), payload: payload)
    }

    private static func arrayMessage(_ elements: [JSONValue]) throws(RealtimeProtocolError) -> RealtimeMessage {
        guard elements.count == 5 else {
            throw RealtimeProtocolError(
                .invalidFraming, "expected a JSON array of 5 elements [join_ref, ref, topic, event, payload], got \(elements.count)")
        }
        return RealtimeMessage(
            joinRef: try Self.ref(elements[0], name: "join_ref"), ref: try Self.ref(elements[1], name: "ref"),
            topic: try Self.string(elements[2], name: "topic"), event: try Self.string(elements[3], name: "event"),
            payload: elements[4])
    }

    private static func ref(_ value: JSONValue?, name: String) throws(RealtimeProtocolError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw RealtimeProtocolError(.invalidField, "\"\(name)\" must be a string or null")
        }
    }

    private static func string(_ value: JSONValue, name: String) throws(RealtimeProtocolError) -> String {
        guard case .string(let text) = value else { throw RealtimeProtocolError(.invalidField, "\"\(name)\" must be a string") }
        return text
    }
}
