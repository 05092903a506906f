public import GuestPassJSON

/// A broadcast's own payload: JSON text, or bytes the sender marked binary.
public enum RealtimeBroadcastPayload: Sendable, Equatable, Hashable {
    /// JSON (encoding byte 1). Inbound, it was checked by the strict parser and is kept as the text received, so it is
    /// forwarded without being parsed or written again.
    case json(RealtimeJSON)
    /// Opaque bytes (encoding byte 0); only v2 sockets can receive them.
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

/// A broadcast the server delivers to the sockets of a channel when it came in as a kind-3 frame (or from anywhere the
/// server keeps a broadcast's event and payload apart): encoded once per framing with `frame(for:)`, and the same
/// `RealtimeFrame` sent to every socket of that framing.
///
/// - v2: binary frame kind 4 (1 byte kind; 1 byte each for the lengths of topic, event and metadata; 1 byte payload
///   encoding; then topic, event, metadata and the payload), as Realtime sends any user broadcast to v2 sockets.
/// - v1: a text frame `{"topic":…,"event":"broadcast","payload":{"type":"broadcast","event":…,"payload":<json>,
///   "meta":<metadata>},"ref":null}` (`meta` only with metadata), as Realtime converts them for v1 sockets. A **binary**
///   payload has no JSON form: `frame(for: .v1)` is nil and the server skips v1 sockets, as Realtime does
///   (`convert_to_json_broadcast` refuses it and the message is not delivered).
public struct RealtimeUserBroadcast: Sendable, Equatable {
    /// `realtime:<channel>`: the topic each receiving socket joined.
    public var topic: String
    /// The user's event name.
    public var event: String
    /// Metadata JSON text such as `{"id":"…"}`, or nil for none (a zero length in kind 4).
    public var metadata: RealtimeJSON?
    /// The payload.
    public var payload: RealtimeBroadcastPayload

    /// Makes a broadcast.
    public init(topic: String, event: String, metadata: RealtimeJSON? = nil, payload: RealtimeBroadcastPayload) {
        self.topic = topic
        self.event = event
        self.metadata = metadata
        self.payload = payload
    }

    /// The broadcast a kind-3 push asks for, to deliver on `push.topic` (its metadata is not forwarded: the server adds
    /// its own, such as a message id, if any).
    public init(push: RealtimeBroadcastPush) {
        self.init(topic: push.topic, event: push.event, metadata: nil, payload: push.payload)
    }

    /// The frame for sockets of `version`; nil for a binary payload on v1 (not representable: skip those sockets).
    ///
    /// - Throws: `fieldTooLong` when, for v2, the topic, event or metadata is longer than 255 bytes.
    public func frame(for version: RealtimeVersion) throws(RealtimeProtocolError) -> RealtimeFrame? {
        switch version {
        case .v2: return .binary(try self.kind4Bytes())
        case .v1:
            guard case .json(let json) = self.payload else { return nil }
            let payload = RealtimePayload.broadcast(event: self.event, payload: json, meta: self.metadata)
            return RealtimeOutboundMessage(joinRef: nil, ref: nil, topic: self.topic, event: "broadcast", payload: payload).frame(for: .v1)
        }
    }

    private func kind4Bytes() throws(RealtimeProtocolError) -> [UInt8] {
        let topic = Array(self.topic.utf8)
        let event = Array(self.event.utf8)
        let metadata = Array((self.metadata?.text ?? "").utf8)
        for (name, field) in [("topic", topic), ("event", event), ("metadata", metadata)] where field.count > 255 {
            throw RealtimeProtocolError(.fieldTooLong, "the broadcast's \(name) is \(field.count) bytes; a binary frame allows 255")
        }
        var bytes: [UInt8] = []
        let body: [UInt8]
        let encoding: UInt8
        switch self.payload {
        case .json(let json):
            body = Array(json.text.utf8)
            encoding = 1
        case .binary(let data):
            body = data
            encoding = 0
        }
        bytes.reserveCapacity(5 + topic.count + event.count + metadata.count + body.count)
        bytes.append(4)
        bytes.append(UInt8(topic.count))
        bytes.append(UInt8(event.count))
        bytes.append(UInt8(metadata.count))
        bytes.append(encoding)
        bytes.append(contentsOf: topic)
        bytes.append(contentsOf: event)
        bytes.append(contentsOf: metadata)
        bytes.append(contentsOf: body)
        return bytes
    }
}
