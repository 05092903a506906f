import GuestPassJSON
import Testing

@testable import RealtimeProtocol

/// Versions from `vsn`, and every way a text frame can be wrong, each a typed error with a clear message.
@Suite struct DecodingTests {
    static func error(_ text: String, _ version: RealtimeVersion, limits: RealtimeLimits = .standard) -> RealtimeProtocolError? {
        protocolError { () throws(RealtimeProtocolError) in try RealtimeDecoder(version: version, limits: limits).decode(text: text) }
    }

    @Test func versionsFromVsn() {
        #expect(RealtimeVersion(vsn: nil) == .v1)
        #expect(RealtimeVersion(vsn: "1.0.0") == .v1)
        #expect(RealtimeVersion(vsn: "2.0.0") == .v2)
        for other in ["", "2.0", "2", "1.0", "3.0.0", " 2.0.0", "2.0.0 ", "v2"] { #expect(RealtimeVersion(vsn: other) == nil, "\(other)") }
    }

    @Test func refsMayBeNullOrAbsentButNotNumbers() throws {
        let v1 = RealtimeDecoder(version: .v1)
        let bare = try v1.decode(text: #"{"topic":"t","event":"e","payload":[1],"extra":{"ignored":true}}"#)
        #expect(bare == RealtimeMessage(joinRef: nil, ref: nil, topic: "t", event: "e", payload: .array([.number(1)])))
        let nulls = try v1.decode(text: #"{"topic":"t","event":"e","payload":null,"ref":null,"join_ref":null}"#)
        #expect(nulls.ref == nil && nulls.joinRef == nil && nulls.payload == .null)
        #expect(Self.error(#"{"topic":"t","event":"e","payload":{},"ref":1}"#, .v1)?.message == #""ref" must be a string or null"#)
        #expect(Self.error(#"{"topic":"t","event":"e","payload":{},"join_ref":true}"#, .v1)?.message == #""join_ref" must be a string or null"#)
        #expect(Self.error(#"[1,"2","t","e",{}]"#, .v2)?.message == #""join_ref" must be a string or null"#)
        #expect(Self.error(#"[null,2,"t","e",{}]"#, .v2)?.code == .invalidField)
    }

    @Test func framingErrors() {
        #expect(Self.error(#"[null,"1","t","e",{}]"#, .v1)?.code == .invalidFraming, "an array on a v1 socket")
        #expect(Self.error(#"{"topic":"t","event":"e","payload":{}}"#, .v2)?.code == .invalidFraming, "an object on a v2 socket")
        #expect(
            Self.error(#"[null,"1","t","e"]"#, .v2)?.message == "expected a JSON array of 5 elements [join_ref, ref, topic, event, payload], got 4")
        #expect(Self.error(#"[null,"1","t","e",{},6]"#, .v2)?.code == .invalidFraming)
        #expect(Self.error(#""text""#, .v2)?.code == .invalidFraming)
        #expect(Self.error("42", .v1)?.code == .invalidFraming)
    }

    @Test func fieldErrors() {
        #expect(Self.error(#"{"event":"e","payload":{}}"#, .v1)?.message == #"the message has no "topic""#)
        #expect(Self.error(#"{"topic":"t","payload":{}}"#, .v1)?.message == #"the message has no "event""#)
        #expect(Self.error(#"{"topic":"t","event":"e"}"#, .v1)?.message == #"the message has no "payload""#)
        #expect(Self.error(#"{"topic":1,"event":"e","payload":{}}"#, .v1)?.message == #""topic" must be a string"#)
        #expect(Self.error(#"[null,null,"t",null,{}]"#, .v2)?.message == #""event" must be a string"#)
    }

    @Test func invalidJSONAndBounds() {
        for bad in ["", "[", "{\"topic\":", "[null,null,\"t\",\"e\",{}] x", "[nul]", "\u{FEFF}[]", "[\"\\u0000\"]", "[\"\\ud800\"]", "[1e400]"] {
            #expect(Self.error(bad, .v2)?.code == .invalidJSON, "\(bad)")
        }
        let invalidUTF8 = protocolError { () throws(RealtimeProtocolError) in
            try RealtimeDecoder(version: .v2).decode(textUTF8: Array(#"[null,null,"t","e",{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}]"#.utf8))
        }
        #expect(invalidUTF8?.code == .invalidJSON && invalidUTF8?.message.contains("UTF-8") == true)
        let deep = "[null,null,\"t\",\"e\"," + String(repeating: "[", count: 32) + String(repeating: "]", count: 32) + "]"
        #expect(Self.error(deep, .v2)?.message.contains("nested deeper than 32") == true)
        let shallowEnough = "[null,null,\"t\",\"e\"," + String(repeating: "[", count: 31) + String(repeating: "]", count: 31) + "]"
        #expect(Self.error(shallowEnough, .v2) == nil)
        let small = RealtimeLimits(maxFrameBytes: 64, maxDepth: 4, maxValues: 10)
        #expect(Self.error(#"[null,null,"t","e",[1,2,3,4,5]]"#, .v2, limits: small)?.message.contains("too many values") == true)
        #expect(Self.error(#"[null,null,"t","e",""# + String(repeating: "x", count: 60) + #""]"#, .v2, limits: small)?.code == .frameTooLarge)
        let megabyte = "[null,null,\"t\",\"e\",\"" + String(repeating: "x", count: (1 << 20) - 22) + "\"]"
        #expect(megabyte.utf8.count == 1 << 20)
        #expect(Self.error(megabyte, .v2) == nil, "exactly 1 MiB is accepted")
        #expect(Self.error(megabyte + " ", .v2)?.code == .frameTooLarge)
    }

    @Test func validatingRawJSON() throws {
        #expect(try RealtimeJSON(validating: #" {"a": [1, 2.50]} "#).text == #" {"a": [1, 2.50]} "#)
        #expect(protocolError { () throws(RealtimeProtocolError) in try RealtimeJSON(validating: "{") }?.code == .invalidJSON)
        #expect(RealtimeJSON(json(#"{"b":1,"a":[true,null]}"#)).text == #"{"a":[true,null],"b":1}"#)
        #expect(RealtimeJSON(string: "é\"").text == #""é\"""#)
    }

    @Test func errorsHaveMessagesAndDistinctCodes() {
        #expect(Set(RealtimeProtocolError.Code.allCases.map(\.rawValue)).count == RealtimeProtocolError.Code.allCases.count)
        #expect(RealtimeProtocolError(.invalidFilter, "m").description == "m")
    }
}
