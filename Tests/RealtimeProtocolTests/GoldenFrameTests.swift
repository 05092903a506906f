import GuestPassJSON
import Testing

@testable import RealtimeProtocol

/// Every message of section 1.5 of the study (and the change event of 1.4), byte for byte, in both framings: what the
/// clients send decodes to the typed message, what the server sends encodes to the exact frame.
@Suite struct GoldenFrameTests {
    static let v1 = RealtimeDecoder(version: .v1)
    static let v2 = RealtimeDecoder(version: .v2)

    /// Decodes the same message from its v1 object and its v2 array and checks both give `expected`.
    static func expectInbound(v1: String, v2: String, _ expected: RealtimeMessage, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try Self.v1.decode(text: v1) == expected, sourceLocation: sourceLocation)
        #expect(try Self.v2.decode(text: v2) == expected, sourceLocation: sourceLocation)
    }

    /// Encodes `message` in both framings and compares the text exactly.
    static func expectOutbound(_ message: RealtimeOutboundMessage, v1: String, v2: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(message.text(for: .v1) == v1, sourceLocation: sourceLocation)
        #expect(message.text(for: .v2) == v2, sourceLocation: sourceLocation)
        #expect(message.frame(for: .v2) == .text(v2), sourceLocation: sourceLocation)
    }

    @Test func heartbeatAndItsReply() throws {
        let heartbeat = RealtimeMessage(joinRef: nil, ref: "26", topic: "phoenix", event: "heartbeat", payload: .object([:]))
        try Self.expectInbound(
            v1: #"{"topic":"phoenix","event":"heartbeat","payload":{},"ref":"26"}"#, v2: #"[null,"26","phoenix","heartbeat",{}]"#, heartbeat)
        Self.expectOutbound(
            .reply(to: heartbeat, payload: RealtimePayload.reply(.ok)),
            v1: #"{"topic":"phoenix","event":"phx_reply","payload":{"status":"ok","response":{}},"ref":"26"}"#,
            v2: #"[null,"26","phoenix","phx_reply",{"status":"ok","response":{}}]"#)
        // supabase-py's heartbeat carries a null ref; the reply carries it back.
        let python = try Self.v1.decode(text: #"{"topic":"phoenix","event":"heartbeat","payload":{},"ref":null}"#)
        #expect(python.ref == nil && python.joinRef == nil)
        #expect(
            RealtimeOutboundMessage.reply(to: python, payload: RealtimePayload.reply(.ok)).text(for: .v1)
                == #"{"topic":"phoenix","event":"phx_reply","payload":{"status":"ok","response":{}},"ref":null}"#)
    }

    @Test func accessToken() throws {
        try Self.expectInbound(
            v1: #"{"topic":"realtime:room1","event":"access_token","payload":{"access_token":"eyJ.x.y"},"ref":"9","join_ref":"1"}"#,
            v2: #"["1","9","realtime:room1","access_token",{"access_token":"eyJ.x.y"}]"#,
            RealtimeMessage(
                joinRef: "1", ref: "9", topic: "realtime:room1", event: "access_token", payload: .object(["access_token": .string("eyJ.x.y")])))
    }

    @Test func leaveItsReplyAndTheClose() throws {
        let leave = RealtimeMessage(joinRef: "1", ref: "12", topic: "realtime:room1", event: "phx_leave", payload: .object([:]))
        try Self.expectInbound(
            v1: #"{"topic":"realtime:room1","event":"phx_leave","payload":{},"ref":"12","join_ref":"1"}"#,
            v2: #"["1","12","realtime:room1","phx_leave",{}]"#, leave)
        Self.expectOutbound(
            .reply(to: leave, payload: RealtimePayload.reply(.ok)),
            v1: #"{"topic":"realtime:room1","event":"phx_reply","payload":{"status":"ok","response":{}},"ref":"12","join_ref":"1"}"#,
            v2: #"["1","12","realtime:room1","phx_reply",{"status":"ok","response":{}}]"#)
        Self.expectOutbound(
            .close(topic: "realtime:room1", joinRef: "1"),
            v1: #"{"topic":"realtime:room1","event":"phx_close","payload":{},"ref":"1","join_ref":"1"}"#,
            v2: #"["1","1","realtime:room1","phx_close",{}]"#)
        Self.expectOutbound(
            .channelError(topic: "realtime:room1", joinRef: "1"),
            v1: #"{"topic":"realtime:room1","event":"phx_error","payload":{},"ref":"1","join_ref":"1"}"#,
            v2: #"["1","1","realtime:room1","phx_error",{}]"#)
    }

    @Test func systemMessages() {
        Self.expectOutbound(
            RealtimeOutboundMessage(
                joinRef: "1", ref: nil, topic: "realtime:room1", event: "system",
                payload: RealtimePayload.system(.system, .error, message: "Token has expired 3 seconds ago", channel: "room1")),
            v1:
                #"{"topic":"realtime:room1","event":"system","payload":{"extension":"system","status":"error","message":"Token has expired 3 seconds ago","channel":"room1"},"ref":null,"join_ref":"1"}"#,
            v2:
                #"["1",null,"realtime:room1","system",{"extension":"system","status":"error","message":"Token has expired 3 seconds ago","channel":"room1"}]"#
        )
        Self.expectOutbound(
            RealtimeOutboundMessage(
                joinRef: nil, ref: nil, topic: "realtime:room1", event: "system",
                payload: RealtimePayload.system(.postgresChanges, .ok, message: "Subscribed to PostgreSQL", channel: "room1")),
            v1:
                #"{"topic":"realtime:room1","event":"system","payload":{"extension":"postgres_changes","status":"ok","message":"Subscribed to PostgreSQL","channel":"room1"},"ref":null}"#,
            v2:
                #"[null,null,"realtime:room1","system",{"extension":"postgres_changes","status":"ok","message":"Subscribed to PostgreSQL","channel":"room1"}]"#
        )
    }

    @Test func unmatchedTopicAndJoinErrors() throws {
        let push = try Self.v2.decode(text: #"["3","7","realtime:other","broadcast",{}]"#)
        Self.expectOutbound(
            .reply(to: push, payload: RealtimePayload.replyError(reason: "unmatched topic")),
            v1:
                #"{"topic":"realtime:other","event":"phx_reply","payload":{"status":"error","response":{"reason":"unmatched topic"}},"ref":"7","join_ref":"3"}"#,
            v2: #"["3","7","realtime:other","phx_reply",{"status":"error","response":{"reason":"unmatched topic"}}]"#)
        #expect(
            RealtimePayload.replyError(reason: "TopicNameRequired: You must provide a topic name").text
                == #"{"status":"error","response":{"reason":"TopicNameRequired: You must provide a topic name"}}"#)
    }

    @Test func broadcastBothWays() throws {
        try Self.expectInbound(
            v1:
                #"{"topic":"realtime:room1","event":"broadcast","payload":{"type":"broadcast","event":"cursor","payload":{"x":1}},"ref":"5","join_ref":"1"}"#,
            v2: #"["1","5","realtime:room1","broadcast",{"type":"broadcast","event":"cursor","payload":{"x":1}}]"#,
            RealtimeMessage(
                joinRef: "1", ref: "5", topic: "realtime:room1", event: "broadcast",
                payload: json(#"{"type":"broadcast","event":"cursor","payload":{"x":1}}"#)))
        Self.expectOutbound(
            RealtimeOutboundMessage(
                joinRef: nil, ref: nil, topic: "realtime:room1", event: "broadcast",
                payload: RealtimePayload.broadcast(event: "cursor", payload: RealtimeJSON(unchecked: #"{"x":1}"#))),
            v1: #"{"topic":"realtime:room1","event":"broadcast","payload":{"type":"broadcast","event":"cursor","payload":{"x":1}},"ref":null}"#,
            v2: #"[null,null,"realtime:room1","broadcast",{"type":"broadcast","event":"cursor","payload":{"x":1}}]"#)
    }

    @Test func presenceTrackStateAndDiff() throws {
        try Self.expectInbound(
            v1:
                #"{"topic":"realtime:room1","event":"presence","payload":{"type":"presence","event":"track","payload":{"name":"A"}},"ref":"6","join_ref":"1"}"#,
            v2: #"["1","6","realtime:room1","presence",{"type":"presence","event":"track","payload":{"name":"A"}}]"#,
            RealtimeMessage(
                joinRef: "1", ref: "6", topic: "realtime:room1", event: "presence",
                payload: json(#"{"type":"presence","event":"track","payload":{"name":"A"}}"#)))
        let meta = RealtimeJSON(unchecked: #"{"phx_ref":"GHlA","name":"A"}"#)
        Self.expectOutbound(
            RealtimeOutboundMessage(
                joinRef: nil, ref: nil, topic: "realtime:room1", event: "presence_state", payload: RealtimePayload.presenceState(["k1": [meta]])),
            v1: #"{"topic":"realtime:room1","event":"presence_state","payload":{"k1":{"metas":[{"phx_ref":"GHlA","name":"A"}]}},"ref":null}"#,
            v2: #"[null,null,"realtime:room1","presence_state",{"k1":{"metas":[{"phx_ref":"GHlA","name":"A"}]}}]"#)
        #expect(RealtimePayload.presenceState([:]).text == "{}")
    }

    @Test func changeEventsCarryTheRecordsOfTheirType() {
        let columns = [RealtimeColumn(name: "id", type: "uuid"), RealtimeColumn(name: "kind", type: "text")]
        let record = RealtimeJSON(unchecked: #"{"id": "0b6e", "kind": "palm", "n": 1.50}"#)  // verbatim, spaces and 1.50 kept
        let old = RealtimeJSON(unchecked: #"{"id":"0b6e"}"#)
        let stamp = "2026-09-02T10:15:04.512Z"
        let update = RealtimePayload.postgresChangesData(
            schema: "public", table: "readings", commitTimestamp: stamp, change: .update(record: record, oldRecord: old), columns: columns)
        Self.expectOutbound(
            RealtimeOutboundMessage(
                joinRef: nil, ref: nil, topic: "realtime:room1", event: "postgres_changes",
                payload: RealtimePayload.postgresChanges(ids: [31_958_874, 7], data: update)),
            v1:
                #"{"topic":"realtime:room1","event":"postgres_changes","payload":{"ids":[31958874,7],"data":{"schema":"public","table":"readings","commit_timestamp":"2026-09-02T10:15:04.512Z","type":"UPDATE","columns":[{"name":"id","type":"uuid"},{"name":"kind","type":"text"}],"record":{"id": "0b6e", "kind": "palm", "n": 1.50},"old_record":{"id":"0b6e"},"errors":null}},"ref":null}"#,
            v2:
                #"[null,null,"realtime:room1","postgres_changes",{"ids":[31958874,7],"data":{"schema":"public","table":"readings","commit_timestamp":"2026-09-02T10:15:04.512Z","type":"UPDATE","columns":[{"name":"id","type":"uuid"},{"name":"kind","type":"text"}],"record":{"id": "0b6e", "kind": "palm", "n": 1.50},"old_record":{"id":"0b6e"},"errors":null}}]"#
        )
        let insert = RealtimePayload.postgresChangesData(
            schema: "public", table: "t", commitTimestamp: stamp, change: .insert(record: old), columns: [])
        #expect(
            insert.text
                == #"{"schema":"public","table":"t","commit_timestamp":"2026-09-02T10:15:04.512Z","type":"INSERT","columns":[],"record":{"id":"0b6e"},"errors":null}"#
        )
        let delete = RealtimePayload.postgresChangesData(
            schema: "public", table: "t", commitTimestamp: stamp, change: .delete(oldRecord: old), columns: [], errors: ["Error 401: Unauthorized"])
        #expect(
            delete.text
                == #"{"schema":"public","table":"t","commit_timestamp":"2026-09-02T10:15:04.512Z","type":"DELETE","columns":[],"old_record":{"id":"0b6e"},"errors":["Error 401: Unauthorized"]}"#
        )
        #expect(RealtimePayload.postgresChanges(ids: [], data: insert).text.hasPrefix(#"{"ids":[],"data":{"#))
    }

    @Test func framesKnowTheirSize() {
        #expect(RealtimeFrame.text("é").byteCount == 2 && RealtimeFrame.binary([1, 2, 3]).byteCount == 3)
    }

    @Test func stringsAreEscaped() throws {
        let nasty = "q\"b\\s/\u{01}\n\r\t\u{08}\u{0C}\u{1F}é😀"
        let message = RealtimeOutboundMessage(
            joinRef: nasty, ref: "r", topic: "realtime:" + nasty, event: nasty, payload: RealtimeJSON(string: nasty))
        let escaped = #""q\"b\\s/\u0001\n\r\t\b\f\u001Fé😀""#
        #expect(message.text(for: .v2) == "[\(escaped),\"r\",\"realtime:\(escaped.dropFirst())," + escaped + "," + escaped + "]")
        for version in RealtimeVersion.allCases {
            let decoded = try RealtimeDecoder(version: version).decode(text: message.text(for: version))
            #expect(decoded == RealtimeMessage(joinRef: nasty, ref: "r", topic: "realtime:" + nasty, event: nasty, payload: .string(nasty)))
        }
        #expect(RealtimePayload.system(.system, .error, message: "a\"b", channel: "c\\d").text.contains(#""message":"a\"b","channel":"c\\d""#))
    }
}
