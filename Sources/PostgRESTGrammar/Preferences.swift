/// The `Prefer` header(s) of a request, as PostgREST reads them (`ApiRequest/Preferences.hs`): every header split on
/// `,`, each entry trimmed, and for each category the **first** value it recognises wins. Entries it does not
/// recognise are kept in `invalid` (a 400 `PGRST122` under `handling=strict`, ignored otherwise).
public struct Preferences: Sendable, Hashable {
    public enum Return: String, Sendable, Hashable {
        case minimal, representation
        case headersOnly = "headers-only"
    }

    public enum Count: String, Sendable, Hashable {
        case exact, planned, estimated
    }

    public enum Resolution: String, Sendable, Hashable {
        case mergeDuplicates = "merge-duplicates"
        case ignoreDuplicates = "ignore-duplicates"
    }

    public enum Missing: String, Sendable, Hashable {
        case `default`, null
    }

    public enum Handling: String, Sendable, Hashable {
        case lenient, strict
    }

    public enum Transaction: String, Sendable, Hashable {
        case commit, rollback
    }

    public var returnPreference: Return?
    public var count: Count?
    public var resolution: Resolution?
    public var missing: Missing?
    public var handling: Handling?
    /// `max-affected=n` (n ≥ 0).
    public var maxAffected: Int?
    /// `timezone=…` as given.
    public var timezone: String?
    /// `tx=commit|rollback`: recognised so the server can echo `commit` and refuse `rollback`.
    public var transaction: Transaction?
    /// The entries no category recognised, trimmed, in the order given.
    public var invalid: [String] = []

    public init() {}
}
