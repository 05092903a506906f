import GuestPassJSON
import Testing

@testable import RealtimeProtocol

/// The join as each official client sends it (section 1.2 of the study) and the reply each of them accepts (1.3):
/// bindings echoed in the order sent with the client's own members, plus a non-zero 31-bit integer `id`.
@Suite struct JoinReplyTests {
    /// supabase-js (vsn 2.0.0): bindings exactly as the app passed them (here no `schema` in the second, no `filter`).
    static let javascriptJoin = #"""
        ["1","1","realtime:room1","phx_join",{"config":{"broadcast":{"ack":false,"self":false},"presence":{"key":"","enabled":false},"postgres_changes":[{"event":"*","schema":"public","table":"readings","filter":"user_id=eq.6f1c"},{"event":"INSERT","table":"bouquets"}],"private":false},"access_token":"eyJhbGciOi.x.y","version":"realtime-js/2.112.2"}]
        """#
    /// supabase-swift (vsn 2.0.0): `event` and `schema` always, `replication_ready`, `access_token` null.
    static let swiftJoin = #"""
        ["3","3","realtime:room1","phx_join",{"config":{"broadcast":{"ack":true,"self":true,"replication_ready":false},"presence":{"key":"me","enabled":true},"postgres_changes":[{"event":"UPDATE","schema":"public","table":"readings","filter":"id=in.(1,2)"},{"event":"*","schema":"public"}],"private":false},"access_token":null,"version":"supabase-swift/2.55.1"}]
        """#
    /// supabase-py 2.34.1 (vsn 1.0.0): objects, `schema` defaulted, the API key as the token until `set_auth`.
    static let pythonJoin = #"""
        {"topic":"realtime:room1","event":"phx_join","payload":{"config":{"broadcast":{"ack":false,"self":false},"presence":{"key":"","enabled":false},"postgres_changes":[{"event":"*","schema":"public","table":"readings"},{"event":"DELETE","schema":"public","table":"device_logs","filter":"device_id=eq.d1"},{"event":"*","schema":"public","table":"readings"}],"private":false},"access_token":"sb_publishable_abc"},"ref":"1","join_ref":"1"}
        """#

    /// The `postgres_changes` list of a join reply frame, after checking the reply's envelope.
    static func repliedBindings(_ frame: String, version: RealtimeVersion, joinRef: String) throws -> [[String: JSONValue]] {
        let reply = try RealtimeDecoder(version: version).decode(text: frame)
        #expect(reply.event == "phx_reply" && reply.joinRef == joinRef && reply.ref == joinRef && reply.topic == "realtime:room1")
        #expect(reply.payload.objectValue?["status"] == .string("ok"))
        guard case .array(let list)? = reply.payload.objectValue?["response"]?.objectValue?["postgres_changes"] else {
            Issue.record("no postgres_changes list in \(frame)")
            return []
        }
        return list.compactMap(\.objectValue)
    }

    /// Each replied binding is the requested one plus an integer id in 1…2³¹−1, in the same position.
    static func expectEcho(_ replied: [[String: JSONValue]], of requested: [RealtimeBinding], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(replied.count == requested.count, sourceLocation: sourceLocation)
        for (echo, binding) in zip(replied, requested) {
            var withoutID = echo
            let id = withoutID.removeValue(forKey: "id")
            #expect(withoutID == binding.members, sourceLocation: sourceLocation)
            guard case .number(let number)? = id, let value = Int(number.text) else {
                Issue.record("id is not an integer: \(String(describing: id))", sourceLocation: sourceLocation)
                continue
            }
            #expect(value == binding.id && value > 0 && value < 1 << 31, sourceLocation: sourceLocation)
        }
    }

    @Test func supabaseJS() throws {
        let join = try RealtimeDecoder(version: .v2).decode(text: Self.javascriptJoin)
        let config = try RealtimeJoinConfig.parse(payload: join.payload)
        #expect(config.accessToken == "eyJhbGciOi.x.y" && !config.isPrivate && !config.presence.enabled && !config.broadcast.ack)
        let bindings = config.postgresChanges
        #expect(bindings.map(\.event) == [.all, .insert] && bindings.map(\.schema) == ["public", "public"])
        #expect(bindings[1].members["schema"] == nil && bindings[1].filter == nil)
        let frame = RealtimeOutboundMessage.reply(to: join, payload: RealtimePayload.joinReply(bindings: bindings)).text(for: .v2)
        let replied = try Self.repliedBindings(frame, version: .v2, joinRef: "1")
        Self.expectEcho(replied, of: bindings)
        #expect(replied[1]["schema"] == nil && replied[1]["filter"] == nil, "no key the client did not send")
        #expect(
            frame
                == #"["1","1","realtime:room1","phx_reply",{"status":"ok","response":{"postgres_changes":[{"event":"*","filter":"user_id=eq.6f1c","id":\#(bindings[0].id),"schema":"public","table":"readings"},{"event":"INSERT","id":\#(bindings[1].id),"table":"bouquets"}]}}]"#
        )
    }

    @Test func supabaseSwift() throws {
        let join = try RealtimeDecoder(version: .v2).decode(text: Self.swiftJoin)
        let config = try RealtimeJoinConfig.parse(payload: join.payload)
        #expect(config.accessToken == nil && config.broadcast == .init(ack: true, includeSelf: true))
        #expect(config.presence == .init(key: "me", enabled: true))
        #expect(config.postgresChanges.map(\.event) == [.update, .all] && config.postgresChanges[1].table == nil)
        let frame = RealtimeOutboundMessage.reply(to: join, payload: RealtimePayload.joinReply(bindings: config.postgresChanges)).text(for: .v2)
        let replied = try Self.repliedBindings(frame, version: .v2, joinRef: "3")
        Self.expectEcho(replied, of: config.postgresChanges)
        // supabase-swift decodes `schema` as required and `event` as one of the four uppercase values.
        #expect(replied.allSatisfy { $0["schema"] == .string("public") })
        #expect(replied.map { $0["event"] } == [.string("UPDATE"), .string("*")])
    }

    @Test func supabasePython() throws {
        let join = try RealtimeDecoder(version: .v1).decode(text: Self.pythonJoin)
        let config = try RealtimeJoinConfig.parse(payload: join.payload)
        #expect(config.accessToken == "sb_publishable_abc")
        let bindings = config.postgresChanges
        let frame = RealtimeOutboundMessage.reply(to: join, payload: RealtimePayload.joinReply(bindings: bindings)).text(for: .v1)
        #expect(frame.hasPrefix(#"{"topic":"realtime:room1","event":"phx_reply","payload":{"status":"ok","response":{"postgres_changes":[{"#))
        #expect(frame.hasSuffix(#"]}},"ref":"1","join_ref":"1"}"#))
        let replied = try Self.repliedBindings(frame, version: .v1, joinRef: "1")
        Self.expectEcho(replied, of: bindings)
        #expect(bindings[0].id == bindings[2].id, "identical bindings, one id")
        #expect(bindings[0].id != bindings[1].id)
        #expect(bindings[1].event.matches(.delete) && !bindings[1].event.matches(.insert))
    }

    @Test func noBindingsIsAnEmptyList() throws {
        for payload in [#"{}"#, #"{"config":{}}"#, #"{"config":{"postgres_changes":null}}"#, #"{"config":{"postgres_changes":[]}}"#] {
            let config = try RealtimeJoinConfig.parse(payload: json(payload))
            #expect(config == RealtimeJoinConfig())
            #expect(RealtimePayload.joinReply(bindings: config.postgresChanges).text == #"{"status":"ok","response":{"postgres_changes":[]}}"#)
        }
    }

    @Test func bindingIDsAreTheDocumentedHash() throws {
        let binding = try RealtimeBinding(members: json(#"{"table":"readings","schema":"public","event":"*"}"#).objectValue ?? [:])
        #expect(binding.id == referenceBindingID(canonical: #"{"event":"*","schema":"public","table":"readings"}"#))
        // Member order and whitespace as sent do not matter; values and keys do.
        let reordered = try RealtimeBinding(members: json(#"{ "event" : "*", "table":"readings", "schema":"public" }"#).objectValue ?? [:])
        #expect(reordered.id == binding.id)
        let lowercase = try RealtimeBinding(members: json(#"{"table":"readings","schema":"public","event":"insert"}"#).objectValue ?? [:])
        #expect(lowercase.id != binding.id && lowercase.event == .insert)
        // Thousands of distinct bindings: ids in range, never 0, and (here) no collision.
        var ids: Set<Int> = []
        for index in 0..<5_000 {
            let id = try RealtimeBinding(members: ["table": .string("t\(index)"), "event": .string("*")]).id
            #expect(id > 0 && id < 1 << 31)
            ids.insert(id)
        }
        #expect(ids.count == 5_000)
    }

    @Test func tolerantReadingOfWhatClientsVary() throws {
        let config = try RealtimeJoinConfig.parse(
            payload: json(
                #"{"config":{"broadcast":{"ack":"TRUE","self":"false","replay":{"since":1}},"presence":{"key":null},"private":"True","extra":1},"user_token":"legacy","version":"x"}"#
            ))
        #expect(config.broadcast == .init(ack: true, includeSelf: false) && config.isPrivate && config.presence == .init())
        #expect(config.accessToken == "legacy")
        let both = try RealtimeJoinConfig.parse(payload: json(#"{"access_token":"new","user_token":"old"}"#))
        #expect(both.accessToken == "new")
        let events = try RealtimeJoinConfig.parse(
            payload: json(
                #"{"config":{"postgres_changes":[{"event":"delete"},{"event":"Update"},{},{"event":"TRUNCATE"},{"event":null,"filter":""}]}}"#))
        #expect(events.postgresChanges.map(\.event) == [.delete, .update, .all, .all, .all])
        #expect(events.postgresChanges[4].filter == "")
        #expect(try events.postgresChanges[4].parsedFilter().conditions.isEmpty)
        #expect(events.postgresChanges[4].echo.text.contains(#""event":null"#), "a null member is echoed as sent")
    }

    @Test func wrongTypesAreTypedErrors() {
        let cases: [(String, String)] = [
            (#"[]"#, "payload must be an object"),
            (#"{"config":[]}"#, "config must be an object"),
            (#"{"config":{"broadcast":true}}"#, "config.broadcast must be an object"),
            (#"{"config":{"broadcast":{"ack":1}}}"#, "config.broadcast.ack must be a boolean"),
            (#"{"config":{"broadcast":{"self":"yes"}}}"#, "config.broadcast.self must be a boolean"),
            (#"{"config":{"presence":{"key":5}}}"#, "config.presence.key must be a string"),
            (#"{"config":{"private":0}}"#, "config.private must be a boolean"),
            (#"{"config":{"postgres_changes":{}}}"#, "config.postgres_changes must be an array"),
            (#"{"config":{"postgres_changes":[null]}}"#, "config.postgres_changes[0] must be an object"),
            (#"{"config":{"postgres_changes":[{},{"table":1}]}}"#, "config.postgres_changes[1].table must be a string"),
            (#"{"config":{"postgres_changes":[{"event":["*"]}]}}"#, "config.postgres_changes[0].event must be a string"),
            (#"{"config":{"postgres_changes":[{"select":"id"}]}}"#, "config.postgres_changes[0].select must be an array of strings"),
            (#"{"config":{"postgres_changes":[{"select":["id",2]}]}}"#, "config.postgres_changes[0].select must be an array of strings"),
            (#"{"access_token":123}"#, "access_token must be a string"),
            (#"{"user_token":false}"#, "user_token must be a string"),
        ]
        for (payload, message) in cases {
            let error = protocolError { () throws(RealtimeProtocolError) in try RealtimeJoinConfig.parse(payload: json(payload)) }
            #expect(error?.code == .invalidField, "\(payload)")
            #expect(error?.message == "invalid join payload: " + message, "\(payload)")
        }
    }

    @Test func topics() throws {
        let topic = try RealtimeTopic("realtime:room:1")
        #expect(topic.channelName == "room:1" && topic.topic == "realtime:room:1")
        let required = protocolError { () throws(RealtimeProtocolError) in try RealtimeTopic("realtime:") }
        #expect(required == RealtimeProtocolError(.topicNameRequired, "You must provide a topic name"))
        for other in ["phoenix", "", "Realtime:x", "realtime", " realtime:x"] {
            #expect(protocolError { () throws(RealtimeProtocolError) in try RealtimeTopic(other) }?.code == .unmatchedTopic, "\(other)")
        }
    }
}
