public import GuestPassJSON

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
        JSONText.appendString(string, to: &text)
        self.text = text
    }

    /// `{}`: the payload of `phx_close`, `phx_error`, and the heartbeat reply's `response`.
    public static let emptyObject = RealtimeJSON(unchecked: "{}")
    /// `null`.
    public static let null = RealtimeJSON(unchecked: "null")

    public var description: String { self.text }
}

/// Writing JSON text by concatenation.
enum JSONText {
    /// Appends `string` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\r`, `\t`, `\b`, `\f` or
    /// `\u00XX`, everything else (non-ASCII included) as UTF-8, as `CompactJSONEncoder` writes strings.
    static func appendString(_ string: String, to text: inout String) {
        text.append("\"")
        guard string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            text.append(string)
            text.append("\"")
            return
        }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text.append("\\\"")
            case "\\": text.append("\\\\")
            case "\n": text.append("\\n")
            case "\r": text.append("\\r")
            case "\t": text.append("\\t")
            case "\u{08}": text.append("\\b")
            case "\u{0C}": text.append("\\f")
            case "\u{00}"..."\u{1F}":
                let hex = Array("0123456789ABCDEF")
                text.append("\\u00")
                text.append(hex[Int(scalar.value >> 4)])
                text.append(hex[Int(scalar.value & 0x0F)])
            default: text.unicodeScalars.append(scalar)
            }
        }
        text.append("\"")
    }

    /// Appends `string` as a JSON string, or `null` when nil.
    static func appendOptionalString(_ string: String?, to text: inout String) {
        if let string {
            Self.appendString(string, to: &text)
        } else {
            text.append("null")
        }
    }

    /// Appends `"key":` (the key escaped).
    static func appendKey(_ key: String, to text: inout String) {
        Self.appendString(key, to: &text)
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
