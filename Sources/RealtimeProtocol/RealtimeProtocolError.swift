/// Why a frame, a join payload, a topic or a filter was refused, or why an outbound frame cannot be written.
///
/// Every function of this module that can fail throws this type and nothing else (typed `throws`), and none traps on
/// any input. `code` says what kind of problem it is, for the server's choice of answer (a `phx_reply` error, a
/// `system` error, a close); `message` is a sentence for a person, safe to send back to the client: it quotes at most
/// a bounded piece of the input.
public struct RealtimeProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem.
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// The frame is larger than `RealtimeLimits.maxFrameBytes`.
        case frameTooLarge
        /// The text is not a JSON document the strict parser accepts (syntax, invalid UTF-8, NUL, too deep, too many
        /// values, a number out of range).
        case invalidJSON
        /// The JSON is not the framing of the socket's version: not an object for v1, not a 5-element array for v2.
        case invalidFraming
        /// A field of the framing or of a join payload has the wrong type (a numeric `ref`, a `topic` that is not a
        /// string, `config.private` that is an array…).
        case invalidField
        /// A binary frame ends before the lengths in its header say it should.
        case truncatedBinary
        /// A binary frame's kind is not one a client may send (only 3, the user broadcast push, is accepted), or
        /// binary frames on a v1 socket.
        case unknownBinaryKind
        /// A binary frame's payload-encoding byte is neither 0 (binary) nor 1 (JSON).
        case unknownPayloadEncoding
        /// A string of a binary frame (ref, topic, event) is not valid UTF-8.
        case invalidUTF8
        /// The topic is `realtime:` with no channel name (Realtime's `TopicNameRequired`).
        case topicNameRequired
        /// The topic does not start with `realtime:` (Phoenix answers such a join with `unmatched topic`).
        case unmatchedTopic
        /// A `postgres_changes` filter string does not parse, uses an unsupported operator, or exceeds a bound.
        case invalidFilter
    }

    /// What kind of problem.
    public let code: Code
    /// A sentence for a person, e.g. `invalid filter "id=foo.1": unsupported operator "foo" (supported: eq, neq, …)`.
    public let message: String

    /// Makes an error; the module's own code makes every one it throws.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { self.message }

    /// At most `limit` characters of `text`, with `…` when cut: what an error message may quote of the input.
    static func excerpt(_ text: some StringProtocol, limit: Int = 80) -> String {
        let head = text.prefix(limit)
        return head.endIndex == text.endIndex ? String(head) : String(head) + "…"
    }
}
