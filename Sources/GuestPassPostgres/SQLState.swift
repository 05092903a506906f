/// A PostgreSQL SQLSTATE error code (`PG_DIAG_SQLSTATE`), e.g. `23505`.
///
/// A struct rather than an enum so that codes without a named member are still representable.
public struct SQLState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The two-character class of the code (`23` for integrity constraint violations).
    public var errorClass: String { String(self.rawValue.prefix(2)) }
    public var description: String { self.rawValue }

    public static let uniqueViolation = SQLState("23505")
    public static let foreignKeyViolation = SQLState("23503")
    public static let notNullViolation = SQLState("23502")
    public static let checkViolation = SQLState("23514")
    public static let insufficientPrivilege = SQLState("42501")
    public static let undefinedFunction = SQLState("42883")
    public static let undefinedTable = SQLState("42P01")
    public static let duplicateDatabase = SQLState("42P04")
    /// Row-level security policies (or rules) that end up querying their own table again.
    public static let infiniteRecursion = SQLState("42P17")
    /// `stack depth limit exceeded`: a function or trigger that recurses without end.
    public static let statementTooComplex = SQLState("54001")
    public static let syntaxError = SQLState("42601")
    public static let cardinalityViolation = SQLState("21000")
    /// `RAISE … USING ERRCODE = 'PGRST'`: PostgREST's code for an error whose message is a PostgREST error code.
    public static let postgREST = SQLState("PGRST")
    public static let invalidTextRepresentation = SQLState("22P02")
    public static let raiseException = SQLState("P0001")
    public static let serializationFailure = SQLState("40001")
    public static let deadlockDetected = SQLState("40P01")
    public static let queryCanceled = SQLState("57014")
    public static let adminShutdown = SQLState("57P01")
    public static let cannotConnectNow = SQLState("57P03")
    public static let inFailedTransaction = SQLState("25P02")
    public static let readOnlySQLTransaction = SQLState("25006")
    public static let tooManyConnections = SQLState("53300")
    public static let lockNotAvailable = SQLState("55P03")
    public static let invalidParameterValue = SQLState("22023")
    /// `no_data_found`: a function found no such row (the console: an unknown user, app, device, session or key).
    public static let noDataFound = SQLState("P0002")
    /// `GPC01`: the operator console's session is missing, over, or still waiting for its second factor.
    public static let consoleNotSignedIn = SQLState("GPC01")
    /// GuestPass's own: a rate limit or quota is exhausted (HTTP 429; the detail holds the seconds to wait).
    public static let rateLimited = SQLState("PT429")
    /// `PT401`: raised by `guestpass.ensure_guest_device` for a revoked device (HTTP 401).
    public static let deviceRevoked = SQLState("PT401")
    /// `PT404`: a named thing is not there (storage: the bucket of an upload).
    public static let notFoundRaised = SQLState("PT404")
    /// `PT408`: storage: an upload's reservation was swept before its row was written.
    public static let storageReservationExpired = SQLState("PT408")
    /// `PT413`: storage: an upload passes a size limit (detail `size`) or a user's bytes or objects limit (detail
    /// `bytes:N` or `objects:N`).
    public static let storageQuota = SQLState("PT413")
    /// `PT415`: storage: an upload's MIME type is not one of its bucket's (detail: the type).
    public static let unsupportedMediaType = SQLState("PT415")

    /// Whether the class says the server or the connection failed, not the statement: 08 (connection), 53
    /// (insufficient resources), 57 (operator intervention, e.g. a shutdown) but not 57014 (a cancelled statement).
    public var isUnavailability: Bool {
        ["08", "53", "57"].contains(self.errorClass) && self != .queryCanceled
    }

    /// Whether the class says the statement's input was wrong (PostgREST answers these 400): 22 (data exception),
    /// 23 (integrity), 42 (syntax or access rule), P0 (raise), 0A, 2B, 2F, 39, 44.
    public var isClientError: Bool {
        ["22", "23", "42", "P0", "0A", "2B", "2F", "39", "44"].contains(self.errorClass)
    }
}
