import GuestPassTestSupport
import GuestPassJSON
import Testing

@testable import RealtimeProtocol

/// Random, mutated and generated frames: decoding never traps and only ever throws `RealtimeProtocolError` (typed
/// throws make that a compile-time fact; these tests exercise the paths), and encoding then decoding gives back the
/// message in both framings. Seeded, bounded in count, and cut short by a generous time budget on a slow machine
/// (the budget only bounds the run; it asserts nothing about speed).
@Suite struct FuzzAndRoundTripTests {
    static let budget = Duration.seconds(60)

    static let seeds: [String] = [
        #"[null,"26","phoenix","heartbeat",{}]"#,
        #"["1","1","realtime:room1","phx_join",{"config":{"broadcast":{"ack":false,"self":false},"presence":{"key":"","enabled":false},"postgres_changes":[{"event":"*","schema":"public","table":"readings","filter":"user_id=eq.6f1c,id=in.(1,\"a,b\")"}],"private":false},"access_token":"x"}]"#,
        #"{"topic":"realtime:room1","event":"phx_join","payload":{"config":{"postgres_changes":[{"event":"INSERT","schema":"public","table":"t"}]}},"ref":"1","join_ref":"1"}"#,
        #"["1","5","realtime:room1","broadcast",{"type":"broadcast","event":"cursor","payload":{"x":1.5e3,"s":"é\n\u00e9"}}]"#,
        #"{"topic":"realtime:room1","event":"access_token","payload":{"access_token":"eyJ"},"ref":"9","join_ref":"1"}"#,
    ]
    static let alphabet: [UInt8] = Array(#"[]{}":,.-+eE0123456789 nulltruefalse\u"#.utf8) + [0x00, 0x0A, 0xC3, 0xA9, 0xFF, 0x80]

    /// `bytes` with a few random edits: flips, insertions, deletions, truncation, duplication of a slice.
    static func mutated(_ bytes: [UInt8], _ generator: inout SeededGenerator) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            let index = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<6, using: &generator) {
            case 0 where !bytes.isEmpty: bytes[index] = UInt8.random(in: 0...255, using: &generator)
            case 1: bytes.insert(Self.alphabet.randomElement(using: &generator) ?? 0, at: index)
            case 2 where !bytes.isEmpty: bytes.remove(at: index)
            case 3: bytes = Array(bytes.prefix(index))
            case 4 where !bytes.isEmpty:
                let end = min(bytes.count, index + Int.random(in: 1...8, using: &generator))
                bytes.insert(contentsOf: bytes[index..<end], at: index)
            default: break
            }
        }
        return bytes
    }

    /// Runs everything a server would run on one inbound text frame; returns whether it was accepted.
    static func exerciseText(_ bytes: [UInt8]) -> Bool {
        for version in RealtimeVersion.allCases {
            do {
                let message = try RealtimeDecoder(version: version).decode(textUTF8: bytes)
                _ = try? RealtimeTopic(message.topic)
                if let config = try? RealtimeJoinConfig.parse(payload: message.payload) {
                    _ = RealtimePayload.joinReply(bindings: config.postgresChanges)
                    for binding in config.postgresChanges { _ = try? binding.parsedFilter() }
                }
                return true
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
        return false
    }

    @Test func randomAndMutatedTextFramesNeverTrap() {
        var generator = SeededGenerator(seed: 0x5EED)
        let clock = ContinuousClock()
        let start = clock.now
        var accepted = 0
        var refused = 0
        for round in 0..<6_000 {
            if round % 500 == 0, clock.now - start > Self.budget { break }
            let bytes: [UInt8]
            if round.isMultiple(of: 3) {
                bytes = (0..<Int.random(in: 0...40, using: &generator)).map { _ in Self.alphabet.randomElement(using: &generator) ?? 0 }
            } else {
                bytes = Self.mutated(Array((Self.seeds.randomElement(using: &generator) ?? "").utf8), &generator)
            }
            if Self.exerciseText(bytes) { accepted += 1 } else { refused += 1 }
        }
        #expect(accepted > 100 && refused > 1_000, "both outcomes exercised: \(accepted) accepted, \(refused) refused")
    }

    @Test func randomAndMutatedBinaryFramesNeverTrap() {
        var generator = SeededGenerator(seed: 0xB1_7E)
        let decoder = RealtimeDecoder(version: .v2)
        let valid = [
            userBroadcastPush(joinRef: "1", ref: "5", topic: "realtime:room1", event: "cursor", encoding: 1, payload: Array(#"{"x":[1,2]}"#.utf8)),
            userBroadcastPush(joinRef: nil, ref: "7", topic: "realtime:r", event: "b", metadata: #"{"id":1}"#, encoding: 0, payload: [1, 2, 3]),
        ]
        var accepted = 0
        var refused = 0
        for round in 0..<6_000 {
            var bytes: [UInt8]
            if round.isMultiple(of: 3) {
                bytes = (0..<Int.random(in: 0...48, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if !bytes.isEmpty, Bool.random(using: &generator) { bytes[0] = 3 }
            } else {
                bytes = Self.mutated(valid.randomElement(using: &generator) ?? [], &generator)
            }
            do {
                _ = try decoder.decode(binary: bytes)
                accepted += 1
            } catch {
                #expect(!error.message.isEmpty)
                refused += 1
            }
        }
        #expect(accepted > 100 && refused > 1_000, "both outcomes exercised: \(accepted) accepted, \(refused) refused")
    }

    @Test func randomFiltersNeverTrap() {
        var generator = SeededGenerator(seed: 0xF1_17E2)
        let pieces = ["a", "=", "eq", "in", "not", ".", ",", "(", ")", "\"", "\\", " ", "é", "1", "neq", "lt", "gte", "like"]
        var parsed = 0
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...16, using: &generator)).map { _ in pieces.randomElement(using: &generator) ?? "" }.joined()
            do {
                _ = try RealtimeFilter.parse(text)
                parsed += 1
            } catch {
                #expect(error.code == .invalidFilter)
            }
        }
        #expect(parsed > 50)
    }

    // MARK: Round trips

    static func randomString(_ generator: inout SeededGenerator) -> String {
        let characters: [Character] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{01}", "\u{1F}", "é", "😀", ":", ",", "["]
        return String((0..<Int.random(in: 0...12, using: &generator)).map { _ in characters.randomElement(using: &generator) ?? "a" })
    }

    static func randomValue(_ generator: inout SeededGenerator, depth: Int = 0) -> JSONValue {
        switch Int.random(in: 0..<(depth > 3 ? 4 : 6), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .number(JSONNumber(integerLiteral: Int.random(in: -1_000_000...1_000_000, using: &generator)))
        case 3: return .string(Self.randomString(&generator))
        case 4: return .array((0..<Int.random(in: 0...3, using: &generator)).map { _ in Self.randomValue(&generator, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &generator) {
                members[Self.randomString(&generator)] = Self.randomValue(&generator, depth: depth + 1)
            }
            return .object(members)
        }
    }

    @Test func encodeThenDecodeGivesTheMessageBack() throws {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2_000 {
            let payload = Self.randomValue(&generator)
            let joinRef = Bool.random(using: &generator) ? Self.randomString(&generator) : nil
            let ref = Bool.random(using: &generator) ? Self.randomString(&generator) : nil
            let topic = Self.randomString(&generator)
            let event = Self.randomString(&generator)
            let outbound = RealtimeOutboundMessage(joinRef: joinRef, ref: ref, topic: topic, event: event, payload: RealtimeJSON(payload))
            for version in RealtimeVersion.allCases {
                let decoded = try RealtimeDecoder(version: version).decode(text: outbound.text(for: version))
                #expect(decoded == RealtimeMessage(joinRef: joinRef, ref: ref, topic: topic, event: event, payload: payload))
            }
        }
    }

    @Test func binaryPushesDecodeIntoTheirParts() throws {
        var generator = SeededGenerator(seed: 8)
        for _ in 0..<1_000 {
            let topic = "realtime:" + Self.randomString(&generator)
            let event = Self.randomString(&generator)
            let isJSON = Bool.random(using: &generator)
            let value = Self.randomValue(&generator)
            let body =
                isJSON
                ? Array(value.jsonText.utf8)
                : (0..<Int.random(in: 0...16, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let push = try RealtimeDecoder(version: .v2).decode(
                binary: userBroadcastPush(joinRef: "1", ref: "2", topic: topic, event: event, encoding: isJSON ? 1 : 0, payload: body))
            #expect(push.topic == topic && push.event == event)
            #expect(push.payload == (isJSON ? .json(RealtimeJSON(unchecked: value.jsonText)) : .binary(body)))
        }
    }
}
