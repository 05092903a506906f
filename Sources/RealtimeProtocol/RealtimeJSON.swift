public import GuestPassJSON
import GuestPassCrypto

/// Serialised JSON text that is embedded into outbound frames verbatim, never parsed again.
///
/// The server's payloads are mostly JSON it already has as text (a row as `to_jsonb` wrote it, a broadcast as the
/// sender wrote it), so frames are built by concatenation: building one is linear in its size and costs no parse.
/// The price is a contract: the text must be one complete JSON value. `init(unchecked:)` trusts the caller (text
/// from PostgreSQL, from this module's builders, or from a frame this module validated); `init(validating:)` checks;
/// `init(_:)` writes a `JSONValue` (`CompactJSONEncoder`: keys sorted, numbers as written).
public struct RealtimeJSON: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The JSON text.
    public let text: String

    /// Wraps text the caller guarantees is one complete JSON value (not checked).
    public init(unchecked text: String) {
        self.text = text
    }

    /// Wraps `text` after checking it with the strict parser (`GuestPassJSON.JSONParser`, with `limits`).
    ///
    /// - Throws: `invalidJSON` when it is not one JSON value within the limits; `frameTooLarge` beyond
    ///   `limits.maxFrameBytes`.
    public init(validating text: String, limits: RealtimeLimits = .standard) throws(RealtimeProtocolError) {
        _ = try JSONReading.parse(text.utf8, limits: limits)
        self.text = text
    }

    /// The JSON text of `value` (keys sorted, numbers as written).
    public init(_ value: JSONValue) {
        self.text = value.jsonText
    }

    /// The JSON string literal of `string` (quoted and escaped).
    public init(string: String) {
        var text = ""
        JSONString.append(string, to: &text)
        self.text = text
    }

    /// `{}`: the payload of `phx_close`, `phx_error`, and the heartbeat reply's `response`.
    public static let emptyObject = RealtimeJSON(unchecked: "{}")

    public var description: String { self.text }
}

/// Writing JSON text by concatenation (strings through GuestPassCrypto's `JSONString`, the one JSON string writer).
enum JSONText {
    /// Appends `string` as a JSON string, or `null` when nil.
    static func appendOptionalString(_ string: String?, to text: inout String) {
        if let string {
            JSONString.append(string, to: &text)
        } else {
            text.append("null")
        }
    }

    /// Appends `"key":` (the key escaped).
    static func appendKey(_ key: String, to text: inout String) {
        JSONString.append(key, to: &text)
        text.append(":")
    }
}

/// Parsing with the module's limits, failures as `RealtimeProtocolError`.
enum JSONReading {
    static func parse(_ bytes: some Collection<UInt8>, limits: RealtimeLimits) throws(RealtimeProtocolError) -> JSONValue {
        guard bytes.count <= limits.maxFrameBytes else {
            throw RealtimeProtocolError(.frameTooLarge, "frame of \(bytes.count) bytes is larger than the limit of \(limits.maxFrameBytes) bytes")
        }
        do {
            return try JSONParser.parse(bytes, maxDepth: limits.maxDepth, maxValues: limits.maxValues)
        } catch let failure as JSONParser.Failure {
            throw RealtimeProtocolError(.invalidJSON, "invalid JSON: \(failure.description)")
        } catch {
            throw RealtimeProtocolError(.invalidJSON, "invalid JSON")
        }
    }
}
