/// A JSON number as text, checked against RFC 8259's number grammar, that `CompactJSONEncoder` writes as given: for
/// numbers a `Double` cannot hold exactly (integers beyond 2^53, decimals of more than 17 significant digits, `1.50`
/// with its trailing zero, `1e400`).
///
/// Only `CompactJSONEncoder` writes it; any other encoder (Foundation's `JSONEncoder`) gets an
/// `EncodingError.invalidValue` rather than a rounded number.
public struct JSONNumberLiteral: Encodable, Sendable {
    /// The number, as written.
    public let text: String

    /// `text` when it is exactly one JSON number (`-0`, `12.5e-3`; not `+1`, `01`, `.5`, `1.`, `NaN` or whitespace
    /// around it); nil otherwise.
    public init?(_ text: String) {
        guard StrictJSON.isNumber(Array(text.utf8)) else { return nil }
        self.text = text
    }

    public func encode(to encoder: any Encoder) throws {
        guard let compact = encoder as? NodeEncoder else {
            throw EncodingError.invalidValue(
                self.text, .init(codingPath: encoder.codingPath, debugDescription: "only CompactJSONEncoder writes a JSONNumberLiteral")
            )
        }
        compact.node.kind = .scalar(compact.node.arena.verbatim(self.text))
    }
}
