public import GuestPassJSON

/// The kind of a row change.
public enum RealtimeChangeType: String, Sendable, Equatable, CaseIterable {
    /// A new row: the event has `record`.
    case insert = "INSERT"
    /// A changed row: `record` and `old_record`.
    case update = "UPDATE"
    /// A removed row: `old_record` only.
    case delete = "DELETE"
}

/// One element of a join's `config.postgres_changes`: what the client asked for, typed for matching, plus the client's
/// own members kept verbatim for the join reply.
///
/// The join reply must echo each binding **in the order sent with the client's own members** and an integer `id`
/// (supabase-js and supabase-py compare position by position, `event`/`schema`/`table`/`filter` by value; supabase-swift
/// looks entries up by `id` and needs `schema`). So `echo` is exactly the members received plus `"id"`: absent keys stay
/// absent (no `schema:"public"` added, no `filter:""`), values as sent, null members kept null.
///
/// `id` is a stable, deterministic 31-bit positive integer (1…2³¹−1, never 0: supabase-py fires a callback only
/// `if self.id and self.id in ids`) derived from the members alone, as Realtime's `:erlang.phash2(params)` is: FNV-1a
/// (32 bits) over the canonical JSON text of the members (`CompactJSONEncoder`: keys sorted by their UTF-8 bytes, no
/// whitespace, strings escaped one way, numbers as written), masked to 31 bits, 0 mapped to 1. Identical bindings get
/// the same id, on every server replica and across restarts. Different bindings of one channel share an id with odds
/// of about n²/2³² for n bindings (Realtime's 27-bit `phash2` has the same risk); clients would then hand each one's
/// changes to both callbacks, so a server that wants certainty compares ids of unequal members at join.
///
/// Typed fields (null is the same as absent; another type is `invalidField`):
/// - `event`: `*`, `INSERT`, `UPDATE`, `DELETE`, any case; absent, and any other string, mean every change, as Realtime's
///   `action_filter` reads it;
/// - `schema`: `"public"` when absent (for matching only; never added to the echo);
/// - `table`, `filter` (`""` is no filter), `select` (an array of strings; echoed, not interpreted here).
public struct RealtimeBinding: Sendable, Equatable {
    /// Which changes a binding asks for.
    public enum Event: String, Sendable, Equatable, CaseIterable {
        /// `*`: every change.
        case all = "*"
        /// `INSERT` only.
        case insert = "INSERT"
        /// `UPDATE` only.
        case update = "UPDATE"
        /// `DELETE` only.
        case delete = "DELETE"

        /// Whether a change of `type` is wanted.
        public func matches(_ type: RealtimeChangeType) -> Bool {
            self == .all || self.rawValue == type.rawValue
        }
    }

    /// The binding's id (see the type's documentation).
    public let id: Int
    /// The changes wanted.
    public let event: Event
    /// The schema (`"public"` when the client sent none).
    public let schema: String
    /// The table, when one was named.
    public let table: String?
    /// The filter string as sent (parse it with `RealtimeFilter.parse`; `""` means none).
    public let filter: String?
    /// The `select` column list as sent.
    public let select: [String]?
    /// The client's members, verbatim.
    public let members: [String: JSONValue]
    /// The members plus `"id"`, as one JSON object: the element of the join reply's `postgres_changes`.
    public let echo: RealtimeJSON

    /// Reads one binding object.
    ///
    /// - Throws: `invalidField` when a known member has the wrong type.
    public init(members: [String: JSONValue]) throws(RealtimeProtocolError) {
        try self.init(members: members, path: "postgres_changes binding")
    }

    init(members: [String: JSONValue], path: String) throws(RealtimeProtocolError) {
        let eventText = try RealtimeJoinConfig.string(members["event"], path: path + ".event")
        self.event = eventText.flatMap { Event(rawValue: $0.uppercased()) } ?? .all
        self.schema = try RealtimeJoinConfig.string(members["schema"], path: path + ".schema") ?? "public"
        self.table = try RealtimeJoinConfig.string(members["table"], path: path + ".table")
        self.filter = try RealtimeJoinConfig.string(members["filter"], path: path + ".filter")
        switch members["select"] {
        case nil, .null?: self.select = nil
        case .array(let columns)?:
            var names: [String] = []
            for column in columns {
                guard case .string(let name) = column else { throw RealtimeJoinConfig.wrongType(path + ".select", "an array of strings") }
                names.append(name)
            }
            self.select = names
        default: throw RealtimeJoinConfig.wrongType(path + ".select", "an array of strings")
        }
        self.members = members
        self.id = Self.id(of: members)
        var echoed = members
        echoed["id"] = .number(JSONNumber(integerLiteral: self.id))
        self.echo = RealtimeJSON(.object(echoed))
    }

    /// The filter's conditions (none when `filter` is absent or `""`).
    ///
    /// - Throws: `invalidFilter` (see `RealtimeFilter.parse`).
    public func parsedFilter() throws(RealtimeProtocolError) -> RealtimeFilter {
        try RealtimeFilter.parse(self.filter ?? "")
    }

    /// The id of a binding with these members: FNV-1a 32 over their canonical JSON, 31 bits, never 0.
    static func id(of members: [String: JSONValue]) -> Int {
        var hash: UInt32 = 0x811C_9DC5
        for byte in JSONValue.object(members).jsonText.utf8 {
            hash ^= UInt32(byte)
            hash &*= 0x0100_0193
        }
        let id = Int(hash & 0x7FFF_FFFF)
        return id == 0 ? 1 : id
    }
}
