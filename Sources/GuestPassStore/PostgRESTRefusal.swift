/// A request the store's statement builders refuse before any SQL runs (an RPC array argument that is not plain, an
/// unknown cast type, an embedding that names no relationship or several, one nested too deep, a filter on an
/// embedding the select list lacks), in PostgREST's terms: its code (`PostgRESTCode`), message, details and hint.
///
/// The store says what is wrong, not how HTTP answers it: `kind` is the class of the refusal, and GuestPassApp's
/// `APIError.answer(for:dialect:anonymous:)` (the one place that maps failures to HTTP) turns it into the status. A
/// refusal carries no SQL and no value the client did not send.
public struct PostgRESTRefusal: Error, Sendable, Equatable {
    /// The class of the refusal; each maps to one HTTP status.
    public enum Kind: Sendable, Equatable {
        /// The request is malformed or asks for something not served (HTTP 400).
        case badRequest
        /// The request is ambiguous: several relationships fit an embedding (HTTP 300).
        case multipleChoices
        /// The method does not fit the request: a `PUT` that does not name one row by its primary key (HTTP 405).
        case methodNotAllowed
    }

    public let kind: Kind
    /// PostgREST's code (`PostgRESTCode`).
    public let code: String
    public let message: String
    public let details: String?
    public let hint: String?

    public init(_ kind: Kind, code: String, message: String, details: String? = nil, hint: String? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.details = details
        self.hint = hint
    }
}
