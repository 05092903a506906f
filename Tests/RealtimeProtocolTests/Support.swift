import GuestPassJSON
import Testing

@testable import RealtimeProtocol

/// A deterministic generator (SplitMix64) for the property and fuzz tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Parses JSON text the test knows is valid.
func json(_ text: String) -> JSONValue {
    do {
        return try JSONValue.parse(text)
    } catch {
        Issue.record("not JSON: \(text)")
        return .null
    }
}

/// The text of a text frame (an issue when it is binary).
func text(of frame: RealtimeFrame?) -> String? {
    guard case .text(let text)? = frame else {
        Issue.record("expected a text frame, got \(String(describing: frame))")
        return nil
    }
    return text
}

/// The error `body` throws (nil when it does not throw).
func protocolError<T>(_ body: () throws(RealtimeProtocolError) -> T) -> RealtimeProtocolError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// A kind-3 frame as supabase-js and supabase-swift build it: `""` for missing refs, lengths in one byte each.
func userBroadcastPush(
    joinRef: String?, ref: String?, topic: String, event: String, metadata: String = "", encoding: UInt8, payload: [UInt8]
) -> [UInt8] {
    let fields = [joinRef ?? "", ref ?? "", topic, event, metadata].map { Array($0.utf8) }
    var bytes: [UInt8] = [3]
    bytes.append(contentsOf: fields.map { UInt8($0.count) })
    bytes.append(encoding)
    for field in fields { bytes.append(contentsOf: field) }
    bytes.append(contentsOf: payload)
    return bytes
}

/// A kind-4 frame read as supabase-js's `_decodeUserBroadcast` reads it.
func decodeUserBroadcast(_ bytes: [UInt8]) -> (topic: String, event: String, metadata: String, encoding: UInt8, payload: [UInt8])? {
    guard bytes.count >= 5, bytes[0] == 4 else { return nil }
    let (topicSize, eventSize, metadataSize) = (Int(bytes[1]), Int(bytes[2]), Int(bytes[3]))
    var offset = 5
    guard bytes.count >= offset + topicSize + eventSize + metadataSize else { return nil }
    func take(_ count: Int) -> String {
        defer { offset += count }
        return String(decoding: bytes[offset..<offset + count], as: UTF8.self)
    }
    let topic = take(topicSize)
    let event = take(eventSize)
    let metadata = take(metadataSize)
    return (topic, event, metadata, bytes[4], Array(bytes[offset...]))
}

/// FNV-1a 32 masked to 31 bits, 0 → 1: the documented binding id, computed independently of the module.
func referenceBindingID(canonical: String) -> Int {
    var hash: UInt32 = 2_166_136_261
    for byte in canonical.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
    let id = Int(hash % (1 << 31))
    return id == 0 ? 1 : id
}
