extension Preferences {
    /// Parses every `Prefer` header value of a request (see `Preferences`), as PostgREST's `fromHeaders`: each value
    /// split on `,`, each entry trimmed of spaces and tabs; per category the first entry it recognises wins (across
    /// headers, in order). `timezone=` and `max-affected=` take the first entry with that prefix; its value must be a
    /// non-negative integer for `max-affected`, else the preference is unset (as PostgREST, which does not look
    /// further). Entries that are neither a known `key=value` nor one of those prefixes go to `invalid`, in order.
    public static func parse(headers: [String]) -> Preferences {
        let entries = headers.filter { !$0.isEmpty }.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map(Self.trimmed)
        var preferences = Preferences()
        preferences.returnPreference = Self.first(entries, prefix: "return=", as: Return.self)
        preferences.count = Self.first(entries, prefix: "count=", as: Count.self)
        preferences.resolution = Self.first(entries, prefix: "resolution=", as: Resolution.self)
        preferences.missing = Self.first(entries, prefix: "missing=", as: Missing.self)
        preferences.handling = Self.first(entries, prefix: "handling=", as: Handling.self)
        preferences.transaction = Self.first(entries, prefix: "tx=", as: Transaction.self)
        preferences.timezone = entries.lazy.compactMap { Self.value(of: $0, prefix: "timezone=") }.first
        preferences.maxAffected = entries.lazy.compactMap { Self.value(of: $0, prefix: "max-affected=") }.first.flatMap { value in
            Int(value).flatMap { $0 >= 0 ? $0 : nil }
        }
        preferences.invalid = entries.filter { entry in
            !Self.isRecognised(entry) && Self.value(of: entry, prefix: "timezone=") == nil && Self.value(of: entry, prefix: "max-affected=") == nil
        }
        return preferences
    }

    private static let recognised: Set<String> = [
        "return=minimal", "return=representation", "return=headers-only", "count=exact", "count=planned", "count=estimated",
        "resolution=merge-duplicates", "resolution=ignore-duplicates", "missing=default", "missing=null", "handling=lenient",
        "handling=strict", "tx=commit", "tx=rollback",
    ]

    private static func isRecognised(_ entry: String) -> Bool { Self.recognised.contains(entry) }

    private static func first<Value: RawRepresentable<String>>(_ entries: [String], prefix: String, as: Value.Type) -> Value? {
        entries.lazy.compactMap { entry in Self.value(of: entry, prefix: prefix).flatMap(Value.init(rawValue:)) }.first
    }

    private static func value(of entry: String, prefix: String) -> String? {
        entry.hasPrefix(prefix) ? String(entry.dropFirst(prefix.count)) : nil
    }

    /// Haskell's `BS.strip` (ASCII whitespace).
    private static func trimmed(_ entry: Substring) -> String {
        let bytes = Array(entry.utf8)
        let isSpace = { (byte: UInt8) in byte == 0x20 || (0x09...0x0D).contains(byte) }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
