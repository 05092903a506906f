import GuestPassJSON
import Testing
import GuestPassTestSupport

@testable import RealtimeProtocol

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

/// FNV-1a 32 masked to 31 bits, 0 → 1: the documented binding id, computed independently of the module.
func referenceBindingID(canonical: String) -> Int {
    var hash: UInt32 = 2_166_136_261
    for byte in canonical.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
    let id = Int(hash % (1 << 31))
    return id == 0 ? 1 : id
}
