import GuestPassJSON
import Testing

@testable import RealtimeProtocol

/// Binary broadcast frames: kind 3 in (hand-built as the clients build them), kind 4 out (checked byte by byte and read
/// back as supabase-js reads it), and the v1 text form of a broadcast.
@Suite struct BinaryFrameTests {
    static let v2 = RealtimeDecoder(version: .v2)

    @Test func kind3WithAJSONPayload() throws {
        let bytes: [UInt8] =
            [3, 1, 1, 14, 6, 0, 1] + Array("1".utf8) + Array("5".utf8) + Array("realtime:room1".utf8) + Array("cursor".utf8)
            + Array(#"{"x":1, "y": [2.50]}"#.utf8)
        #expect(
            bytes
                == userBroadcastPush(
                    joinRef: "1", ref: "5", topic: "realtime:room1", event: "cursor", encoding: 1, payload: Array(#"{"x":1, "y": [2.50]}"#.utf8)))
        let push = try Self.v2.decode(binary: bytes)
        #expect(
            push
                == RealtimeBroadcastPush(
                    joinRef: "1", ref: "5", topic: "realtime:room1", event: "cursor", metadata: nil,
                    payload: .json(RealtimeJSON(unchecked: #"{"x":1, "y": [2.50]}"#))))
    }

    @Test func kind3WithABinaryPayloadMetadataAndEmptyRefs() throws {
        let payload: [UInt8] = [0, 255, 1, 0x80, 0xC3]  // not UTF-8: binary payloads are opaque
        let bytes = userBroadcastPush(
            joinRef: nil, ref: nil, topic: "realtime:é", event: "blob", metadata: #"{"id":"m1"}"#, encoding: 0, payload: payload)
        let push = try Self.v2.decode(binary: bytes)
        #expect(push.joinRef == nil && push.ref == nil, "a zero-length ref is nil")
        #expect(push.topic == "realtime:é" && push.event == "blob" && push.metadata == .object(["id": .string("m1")]))
        #expect(push.payload == .binary(payload))
        let empty = try Self.v2.decode(binary: userBroadcastPush(joinRef: "1", ref: "2", topic: "t", event: "e", encoding: 0, payload: []))
        #expect(empty.payload == .binary([]))
    }

    @Test func malformedKind3FramesAreTypedErrors() {
        func code(_ bytes: [UInt8], _ decoder: RealtimeDecoder = Self.v2) -> RealtimeProtocolError.Code? {
            protocolError { () throws(RealtimeProtocolError) in try decoder.decode(binary: bytes) }?.code
        }
        let valid = userBroadcastPush(joinRef: "1", ref: "2", topic: "realtime:a", event: "e", encoding: 1, payload: Array("{}".utf8))
        #expect(code([]) == .truncatedBinary)
        #expect(code([3, 0, 0]) == .truncatedBinary)
        #expect(code([4] + valid.dropFirst()) == .unknownBinaryKind, "kind 4 is server to client")
        for kind: UInt8 in [0, 1, 2, 5, 255] { #expect(code([kind] + valid.dropFirst()) == .unknownBinaryKind) }
        #expect(code(valid, RealtimeDecoder(version: .v1)) == .unknownBinaryKind, "no binary frames on v1")
        var encoding = valid
        encoding[6] = 2
        #expect(code(encoding) == .unknownPayloadEncoding)
        var tooLong = valid
        tooLong[3] = 200  // the topic runs past the end
        #expect(code(tooLong) == .truncatedBinary)
        #expect(code(Array(valid.prefix(9))) == .truncatedBinary)
        #expect(code(userBroadcastPush(joinRef: "1", ref: "2", topic: "t", event: "e", encoding: 1, payload: Array("{".utf8))) == .invalidJSON)
        #expect(code(userBroadcastPush(joinRef: "1", ref: "2", topic: "t", event: "e", encoding: 1, payload: [])) == .invalidJSON)
        #expect(code(userBroadcastPush(joinRef: "1", ref: "2", topic: "t", event: "e", metadata: "{x", encoding: 0, payload: [])) == .invalidJSON)
        #expect(code(userBroadcastPush(joinRef: "1", ref: "2", topic: "t", event: "e", encoding: 1, payload: [0x22, 0xFF, 0x22])) == .invalidJSON)
        var badTopic = userBroadcastPush(joinRef: "1", ref: "2", topic: "ab", event: "e", encoding: 0, payload: [])
        badTopic[9] = 0xFF
        #expect(code(badTopic) == .invalidUTF8)
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        #expect(code(userBroadcastPush(joinRef: "1", ref: "2", topic: "t", event: "e", encoding: 1, payload: Array(deep.utf8))) == .invalidJSON)
        let big = userBroadcastPush(joinRef: "1", ref: "2", topic: "t", event: "e", encoding: 0, payload: [UInt8](repeating: 7, count: 1 << 20))
        #expect(code(big) == .frameTooLarge)
    }

    @Test func ackReplyToAPush() throws {
        let push = try Self.v2.decode(
            binary: userBroadcastPush(joinRef: "1", ref: "5", topic: "realtime:room1", event: "cursor", encoding: 0, payload: []))
        #expect(
            RealtimeOutboundMessage.reply(to: push, payload: RealtimePayload.reply(.ok)).text(for: .v2)
                == #"["1","5","realtime:room1","phx_reply",{"status":"ok","response":{}}]"#)
    }
}
