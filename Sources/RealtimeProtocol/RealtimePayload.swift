import GuestPassCrypto

/// The outcome carried by a `phx_reply` or a `system` message.
public enum RealtimeStatus: String, Sendable, Equatable, CaseIterable {
    /// `"ok"`
    case ok
    /// `"error"`
    case error
}

/// Which part of Realtime a `system` message speaks for.
public enum RealtimeSystemExtension: String, Sendable, Equatable, CaseIterable {
    /// `"postgres_changes"`: the subscription of the channel's bindings succeeded or failed.
    case postgresChanges = "postgres_changes"
    /// `"system"`: the channel itself (a fatal error such as an expired token, always followed by `phx_close`).
    case system
}

/// A column of a change event's `columns`: its name and `pg_type.typname` (`int8`, `uuid`, `_text`).
public struct RealtimeColumn: Sendable, Equatable {
    /// The column's name.
    public var name: String
    /// The type's `typname`.
    public var type: String

    /// Makes a column.
    public init(name: String, type: String) {
        self.name = name
        self.type = type
    }
}

/// A row change with the row images its type carries: INSERT has `record`, UPDATE `record` and `old_record`, DELETE
/// only `old_record`. Each image is the row's JSON object text (as `to_jsonb` wrote it), embedded verbatim.
public enum RealtimeRowChange: Sendable, Equatable {
    /// A new row.
    case insert(record: RealtimeJSON)
    /// A changed row.
    case update(record: RealtimeJSON, oldRecord: RealtimeJSON)
    /// A removed row.
    case delete(oldRecord: RealtimeJSON)

    /// INSERT, UPDATE or DELETE.
    public var type: RealtimeChangeType {
        switch self {
        case .insert: .insert
        case .update: .update
        case .delete: .delete
        }
    }
}

/// The payloads the server sends, as JSON text with the exact shapes the three clients accept (section 1 of
/// `shared/reference/realtime.md`). Raw JSON arguments are embedded verbatim; strings are escaped; object members are
/// written in a fixed order. Wrap a payload in a `RealtimeOutboundMessage` to get a frame.
public enum RealtimePayload {
    /// `{"status":<status>,"response":<response>}`: a `phx_reply`. The heartbeat reply and the ok reply to `phx_leave`,
    /// `presence` and an acked broadcast are `reply(.ok)` (`response` `{}`).
    public static func reply(_ status: RealtimeStatus, response: RealtimeJSON = .emptyObject) -> RealtimeJSON {
        var text = "{\"status\":"
        JSONString.append(status.rawValue, to: &text)
        text.append(",\"response\":")
        text.append(response.text)
        text.append("}")
        return RealtimeJSON(unchecked: text)
    }

    /// `{"status":"error","response":{"reason":<reason>}}`: a refused join (`"InvalidJWTToken: Token has expired …"`,
    /// `"TopicNameRequired: You must provide a topic name"`) or a push on a topic not joined (`"unmatched topic"`).
    public static func replyError(reason: String) -> RealtimeJSON {
        var response = "{\"reason\":"
        JSONString.append(reason, to: &response)
        response.append("}")
        return Self.reply(.error, response: RealtimeJSON(unchecked: response))
    }

    /// `{"status":"ok","response":{"postgres_changes":[…]}}`: the reply to a successful `phx_join`, echoing every binding
    /// in the order sent (each the client's members plus `id`; `[]` when none were asked: supabase-swift marks the
    /// channel subscribed only when the key is present).
    public static func joinReply(bindings: [RealtimeBinding]) -> RealtimeJSON {
        var response = "{\"postgres_changes\":["
        for (index, binding) in bindings.enumerated() {
            if index > 0 { response.append(",") }
            response.append(binding.echo.text)
        }
        response.append("]}")
        return Self.reply(.ok, response: RealtimeJSON(unchecked: response))
    }

    /// `{"extension":…,"status":…,"message":…,"channel":<name>}`: the payload of a `system` push. `channel` is the name
    /// without `realtime:` (`RealtimeTopic.channelName`). E.g. `system(.postgresChanges, .ok, message: "Subscribed to
    /// PostgreSQL", channel: "room1")`; a fatal `system(.system, .error, …)` is followed by `phx_close`.
    public static func system(_ extension: RealtimeSystemExtension, _ status: RealtimeStatus, message: String, channel: String) -> RealtimeJSON {
        var text = "{\"extension\":"
        JSONString.append(`extension`.rawValue, to: &text)
        text.append(",\"status\":")
        JSONString.append(status.rawValue, to: &text)
        text.append(",\"message\":")
        JSONString.append(message, to: &text)
        text.append(",\"channel\":")
        JSONString.append(channel, to: &text)
        text.append("}")
        return RealtimeJSON(unchecked: text)
    }

    /// The `data` object of a change event, built once per change and shared by every channel that receives it:
    /// `{"schema","table","commit_timestamp","type","columns":[{"name","type"}…],"record"?,"old_record"?,"errors"}`.
    /// `commitTimestamp` is UTC with milliseconds and `Z` (`2026-09-02T10:15:04.512Z`: supabase-swift decodes it as a
    /// date and drops the event otherwise). `errors` is `null` when nil, else a list of strings (`"Error 401:
    /// Unauthorized"`); supabase-py requires the key.
    public static func postgresChangesData(
        schema: String, table: String, commitTimestamp: String, change: RealtimeRowChange, columns: [RealtimeColumn], errors: [String]? = nil
    ) -> RealtimeJSON {
        var text = "{\"schema\":"
        JSONString.append(schema, to: &text)
        text.append(",\"table\":")
        JSONString.append(table, to: &text)
        text.append(",\"commit_timestamp\":")
        JSONString.append(commitTimestamp, to: &text)
        text.append(",\"type\":")
        JSONString.append(change.type.rawValue, to: &text)
        text.append(",\"columns\":[")
        for (index, column) in columns.enumerated() {
            text.append(index == 0 ? "{\"name\":" : ",{\"name\":")
            JSONString.append(column.name, to: &text)
            text.append(",\"type\":")
            JSONString.append(column.type, to: &text)
            text.append("}")
        }
        text.append("]")
        switch change {
        case .insert(let record):
            text.append(",\"record\":")
            text.append(record.text)
        case .update(let record, let oldRecord):
            text.append(",\"record\":")
            text.append(record.text)
            text.append(",\"old_record\":")
            text.append(oldRecord.text)
        case .delete(let oldRecord):
            text.append(",\"old_record\":")
            text.append(oldRecord.text)
        }
        text.append(",\"errors\":")
        Self.appendStrings(errors, to: &text)
        text.append("}")
        return RealtimeJSON(unchecked: text)
    }

    /// `{"ids":[…],"data":<data>}`: the payload of a `postgres_changes` push to one channel, `ids` the ids of that
    /// channel's bindings the change passed (filters, event and RLS), `data` from `postgresChangesData`.
    public static func postgresChanges(ids: [Int], data: RealtimeJSON) -> RealtimeJSON {
        var text = "{\"ids\":["
        text.append(ids.map(String.init).joined(separator: ","))
        text.append("],\"data\":")
        text.append(data.text)
        text.append("}")
        return RealtimeJSON(unchecked: text)
    }

    /// `{"type":"broadcast","event":<event>,"payload":<payload>}` (and `"meta":<meta>` when given): a broadcast as
    /// receivers get it in a text frame.
    public static func broadcast(event: String, payload: RealtimeJSON, meta: RealtimeJSON? = nil) -> RealtimeJSON {
        var text = "{\"type\":\"broadcast\",\"event\":"
        JSONString.append(event, to: &text)
        text.append(",\"payload\":")
        text.append(payload.text)
        if let meta {
            text.append(",\"meta\":")
            text.append(meta.text)
        }
        text.append("}")
        return RealtimeJSON(unchecked: text)
    }

    /// `{"<key>":{"metas":[<meta>…]}…}`: the payload of `presence_state`. Each meta is the JSON object a client tracked
    /// plus its `phx_ref`, as the server stores it. Keys are written in sorted order.
    public static func presenceState(_ state: [String: [RealtimeJSON]]) -> RealtimeJSON {
        var text = ""
        Self.appendPresences(state, to: &text)
        return RealtimeJSON(unchecked: text)
    }

    private static func appendPresences(_ presences: [String: [RealtimeJSON]], to text: inout String) {
        text.append("{")
        for (index, key) in presences.keys.sorted().enumerated() {
            if index > 0 { text.append(",") }
            JSONText.appendKey(key, to: &text)
            text.append("{\"metas\":[")
            text.append((presences[key] ?? []).map(\.text).joined(separator: ","))
            text.append("]}")
        }
        text.append("}")
    }

    private static func appendStrings(_ strings: [String]?, to text: inout String) {
        guard let strings else {
            text.append("null")
            return
        }
        text.append("[")
        for (index, string) in strings.enumerated() {
            if index > 0 { text.append(",") }
            JSONString.append(string, to: &text)
        }
        text.append("]")
    }
}
