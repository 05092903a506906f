/// A `postgres_changes` binding's `filter` string, parsed: conditions that are ANDed. Text in, typed conditions out; no
/// SQL (the server maps each condition to SQL, quoting the column against the catalog and casting each value to the
/// column's type inside PostgreSQL, as Realtime does).
///
/// Grammar (Realtime's `parse_filters`, `subscriptions.ex`, restricted to the long-standing operators):
/// - The whole string is trimmed; `""` (or only whitespace) is no condition at all.
/// - Conditions are separated by commas, except commas inside `(…)` or inside a double-quoted value; a quote opens only
///   right after `.`, `(` or `,` (so `a"b` is plain text), and inside it `\` escapes the next character.
/// - Each condition is `column=[not.]op.value`: the column is everything before the first `=`, the operator runs to the
///   next `.`, and the value is **everything after that `.`** (`ts=lt.2026-01-01T00:00:00.5` keeps its dots).
/// - Operators: `eq neq lt lte gt gte in`, exact lower case. Realtime's newer `like ilike match imatch is isdistinct`
///   are refused with a clear message (not yet supported here). `not.` negates one condition (`status=not.in.(a,b)`).
/// - A value that is entirely double-quoted (`name=eq."a,b"`, as supabase-swift writes values with reserved
///   characters) is unquoted, `\x` standing for `x`; any other value is taken verbatim (quotes included when they do not
///   enclose the whole value, as Realtime does).
/// - `in.(…)`: the value must be wrapped in parentheses; items are separated by commas; an item is either
///   double-quoted with backslash escapes (commas, parentheses, spaces and quotes inside; only spaces may follow the
///   closing quote) or bare text, trimmed of spaces, that holds no `"`, `(` or `)` (quote such values, as supabase-swift
///   and PostgREST's in-lists do). `in.()` is the empty list (matches nothing); an empty bare item (`in.(a,,b)`) is an error; at most
///   `maxListValues` (100) items, Realtime's documented cap.
///
/// Bounds and refusals, each an `invalidFilter` error `invalid filter "<condition>": <reason>`: an unterminated quote,
/// a condition without `=` or without `op.`, an empty condition (`a=eq.1,,b=eq.2`), an unknown operator, an empty
/// column, a column longer than `maxColumnBytes` (63, PostgreSQL's identifier limit) or holding `"`, `(`, `)`, `,` or a
/// control character, more than `maxConditions` conditions.
public struct RealtimeFilter: Sendable, Equatable {
    /// A comparison operator.
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        /// `=`
        case eq
        /// `<>`
        case neq
        /// `<`
        case lt
        /// `<=`
        case lte
        /// `>`
        case gt
        /// `>=`
        case gte
        /// `= any(…)`
        case `in`
    }

    /// A condition's right-hand side, as text to be cast to the column's type by PostgreSQL.
    public enum Value: Sendable, Hashable {
        /// One value (every operator but `in`).
        case single(String)
        /// The items of `in.(…)`, in order, unquoted.
        case list([String])
    }

    /// One `column=[not.]op.value` condition.
    public struct Condition: Sendable, Hashable {
        /// The column name as written (unquoted; the server looks it up in the catalog).
        public var column: String
        /// The operator.
        public var op: Operator
        /// Whether `not.` negated it.
        public var negated: Bool
        /// The value or the list.
        public var value: Value

        /// Makes a condition.
        public init(column: String, op: Operator, negated: Bool = false, value: Value) {
            self.column = column
            self.op = op
            self.negated = negated
            self.value = value
        }

        /// The value as a list: one item, or the items of `in`.
        public var values: [String] {
            switch self.value {
            case .single(let value): [value]
            case .list(let values): values
            }
        }
    }

    /// The conditions, ANDed, in the order written; empty for no filter.
    public var conditions: [Condition]

    /// Makes a filter of `conditions`.
    public init(conditions: [Condition]) {
        self.conditions = conditions
    }

    /// The most items of an `in` list.
    public static let maxListValues = 100
    /// The longest column name, in UTF-8 bytes (PostgreSQL's `NAMEDATALEN` − 1).
    public static let maxColumnBytes = 63
    /// The most conditions in one filter.
    public static let maxConditions = 100

    /// Parses a filter string (see the type's documentation for the grammar).
    ///
    /// - Throws: `invalidFilter`, with a message naming the condition and the reason.
    public static func parse(_ text: String) throws(RealtimeProtocolError) -> RealtimeFilter {
        let bytes = Array(text.utf8)
        let trimmed = FilterScanner.trimmed(bytes[...])
        if trimmed.isEmpty { return RealtimeFilter(conditions: []) }
        let segments = try FilterScanner.splitConditions(trimmed, filter: text)
        guard segments.count <= Self.maxConditions else {
            throw Self.failure(text, "more than \(Self.maxConditions) conditions (\(segments.count))")
        }
        var conditions: [Condition] = []
        for segment in segments {
            let condition = FilterScanner.trimmed(segment)
            guard !condition.isEmpty else { throw Self.failure(text, "filter must not contain empty conditions (check for extra commas)") }
            conditions.append(try Self.condition(condition))
        }
        return RealtimeFilter(conditions: conditions)
    }

    // MARK: One condition

    private static func condition(_ segment: ArraySlice<UInt8>) throws(RealtimeProtocolError) -> Condition {
        let text = FilterScanner.string(segment)
        guard let equals = segment.firstIndex(of: UInt8(ascii: "=")) else { throw Self.failure(text, "missing \"=\" after the column") }
        let column = segment[..<equals]
        try Self.checkColumn(column, condition: text)
        var rest = segment[(equals + 1)...]
        let negated = rest.starts(with: "not.".utf8)
        if negated { rest = rest.dropFirst(4) }
        guard let dot = rest.firstIndex(of: UInt8(ascii: ".")) else {
            throw Self.failure(text, "expected \"<column>=<operator>.<value>\"")
        }
        let opText = FilterScanner.string(rest[..<dot])
        guard let op = Operator(rawValue: opText) else {
            let supported = Operator.allCases.map(\.rawValue).joined(separator: ", ")
            throw Self.failure(text, "unsupported operator \"\(RealtimeProtocolError.excerpt(opText, limit: 20))\" (supported: \(supported))")
        }
        let value = rest[(dot + 1)...]
        if op == .in {
            guard value.count >= 2, value.first == UInt8(ascii: "("), value.last == UInt8(ascii: ")") else {
                throw Self.failure(text, "the `in` value must be wrapped in parentheses: in.(a,b)")
            }
            let items = try FilterScanner.listItems(value.dropFirst().dropLast(), condition: text)
            guard items.count <= Self.maxListValues else {
                throw Self.failure(text, "an `in` list holds at most \(Self.maxListValues) values")
            }
            return Condition(column: FilterScanner.string(column), op: op, negated: negated, value: .list(items))
        }
        return Condition(column: FilterScanner.string(column), op: op, negated: negated, value: .single(FilterScanner.unquotedScalar(value)))
    }

    private static func checkColumn(_ column: ArraySlice<UInt8>, condition: String) throws(RealtimeProtocolError) {
        guard !column.isEmpty else { throw Self.failure(condition, "missing the column before \"=\"") }
        guard column.count <= Self.maxColumnBytes else {
            throw Self.failure(condition, "the column name is longer than \(Self.maxColumnBytes) bytes")
        }
        let forbidden: Set<UInt8> = [UInt8(ascii: "\""), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ",")]
        if column.contains(where: { $0 < 0x20 || $0 == 0x7F || forbidden.contains($0) }) {
            throw Self.failure(condition, "the column name must not contain \", (, ), \",\" or control characters")
        }
    }

    /// `invalid filter "<excerpt>": <reason>`.
    static func failure(_ condition: String, _ reason: String) -> RealtimeProtocolError {
        RealtimeProtocolError(.invalidFilter, "invalid filter \"\(RealtimeProtocolError.excerpt(condition))\": \(reason)")
    }
}

/// The byte-level scanning of filter text. Every syntax character is ASCII, so splitting UTF-8 at them never cuts a
/// character in two.
enum FilterScanner {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let comma = UInt8(ascii: ",")

    static func string(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard let first = bytes.firstIndex(where: { !Self.isSpace($0) }), let last = bytes.lastIndex(where: { !Self.isSpace($0) }) else {
            return bytes[bytes.startIndex..<bytes.startIndex]
        }
        return bytes[first...last]
    }

    /// The conditions of a filter: split at commas outside parentheses and quotes.
    static func splitConditions(_ bytes: ArraySlice<UInt8>, filter: String) throws(RealtimeProtocolError) -> [ArraySlice<UInt8>] {
        var segments: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var depth = 0
        var quoted = false
        var previous: UInt8 = 0
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if quoted {
                if byte == Self.backslash {
                    index += 1
                    guard index < bytes.endIndex else { break }
                } else if byte == Self.quote {
                    quoted = false
                }
            } else {
                switch byte {
                case Self.quote where previous == UInt8(ascii: ".") || previous == UInt8(ascii: "(") || previous == Self.comma:
                    quoted = true
                case UInt8(ascii: "("): depth += 1
                case UInt8(ascii: ")"): depth = max(0, depth - 1)
                case Self.comma where depth == 0:
                    segments.append(bytes[start..<index])
                    start = index + 1
                    index += 1
                    previous = 0
                    continue
                default: break
                }
            }
            previous = bytes[index]
            index += 1
        }
        guard !quoted else { throw RealtimeFilter.failure(filter, "unterminated quoted value") }
        segments.append(bytes[start..<bytes.endIndex])
        return segments
    }

    /// A scalar value: unquoted when one quoted string spans all of it, else verbatim.
    static func unquotedScalar(_ value: ArraySlice<UInt8>) -> String {
        guard value.first == Self.quote, let (text, end) = Self.quotedString(value), end == value.endIndex else {
            return Self.string(value)
        }
        return text
    }

    /// The quoted string at the start of `bytes` (which starts with `"`), unescaped, and the index after its closing
    /// quote; nil when it is not closed.
    static func quotedString(_ bytes: ArraySlice<UInt8>) -> (String, ArraySlice<UInt8>.Index)? {
        var unescaped: [UInt8] = []
        var index = bytes.startIndex + 1
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == Self.quote { return (String(decoding: unescaped, as: UTF8.self), index + 1) }
            if byte == Self.backslash {
                index += 1
                guard index < bytes.endIndex else { return nil }
            }
            unescaped.append(bytes[index])
            index += 1
        }
        return nil
    }

    /// The items of an in-list's inside (between the parentheses).
    static func listItems(_ inside: ArraySlice<UInt8>, condition: String) throws(RealtimeProtocolError) -> [String] {
        if Self.trimmed(inside).isEmpty { return [] }
        var items: [String] = []
        var index = inside.startIndex
        while true {
            while index < inside.endIndex, Self.isSpace(inside[index]) { index += 1 }
            if index < inside.endIndex, inside[index] == Self.quote {
                guard let (text, end) = Self.quotedString(inside[index...]) else {
                    throw RealtimeFilter.failure(condition, "unterminated quoted value in the `in` list")
                }
                items.append(text)
                index = end
                while index < inside.endIndex, Self.isSpace(inside[index]) { index += 1 }
                guard index == inside.endIndex || inside[index] == Self.comma else {
                    throw RealtimeFilter.failure(condition, "only a comma may follow a quoted value in the `in` list")
                }
            } else {
                let end = inside[index...].firstIndex(of: Self.comma) ?? inside.endIndex
                let item = Self.trimmed(inside[index..<end])
                guard !item.isEmpty else { throw RealtimeFilter.failure(condition, "empty value in the `in` list (quote it: \"\")") }
                guard !item.contains(where: { $0 == Self.quote || $0 == UInt8(ascii: "(") || $0 == UInt8(ascii: ")") }) else {
                    throw RealtimeFilter.failure(condition, "a quote or parenthesis inside an unquoted `in` value (quote the whole value)")
                }
                items.append(Self.string(item))
                index = end
            }
            guard items.count <= RealtimeFilter.maxListValues else { return items }
            if index == inside.endIndex { return items }
            index += 1  // the comma
            if index == inside.endIndex { throw RealtimeFilter.failure(condition, "empty value in the `in` list (quote it: \"\")") }
        }
    }
}
