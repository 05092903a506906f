import GuestPassJSON
import GuestPassStore
import RealtimeProtocol

/// A cheap, conservative look at a binding's filter before any SQL: `false` only when the filter certainly rejects a
/// row image, so a poll skips the identities none of whose bindings can match (the common subscription
/// `user_id=eq.<me>` then costs one check per change's owner, not one per subscriber).
///
/// It decides only `eq` and `in` conditions (not negated) on columns whose values compare exactly as their JSON text
/// does once normalised: `text`, `varchar`, `name`, `uuid` (its 32 hex digits), `int2`/`int4`/`int8`
/// (as integers) and `bool` (PostgreSQL's spellings). Anything else, or a value it cannot read, answers "maybe", and
/// PostgreSQL decides in `RealtimeVisibility`, as it always does for the rows that pass here.
enum RealtimePrefilter {
    /// Whether `image` may pass `conditions` (ANDed).
    static func mayMatch(_ conditions: [RealtimeFilter.Condition], image: [String: JSONValue]?, table: RealtimeTable) -> Bool {
        guard let image else { return true }
        for condition in conditions where !condition.negated && (condition.op == .eq || condition.op == .in) {
            guard let type = table.column(condition.column)?.type, let value = image[condition.column] else { continue }
            guard case .some(let matches) = self.decide(type: type, json: value, values: condition.values) else { continue }
            if !matches { return false }
        }
        return true
    }

    /// What a row image's value is to the comparisons decided here: never equal to anything (NULL), a normalised key
    /// (equal to a filter value exactly when that value normalises to the same key), or undecidable.
    enum Stored: Equatable {
        case never
        case key(String)
        case unknown
    }

    /// The image's value of a column of `type`, normalised (`Stored`).
    static func stored(type: String, json: JSONValue) -> Stored {
        if case .null = json { return .never }  // `= x` and `= any(…)` are never true for NULL
        switch type {
        case "text", "varchar", "name":
            guard case .string(let text) = json else { return .unknown }
            return .key(text)
        case "uuid":
            guard case .string(let text) = json, let digits = self.uuidDigits(text) else { return .unknown }
            return .key(digits)
        case "int2", "int4", "int8":
            guard case .number(let number) = json, let value = Int(number.text) else { return .unknown }
            return .key(String(value))
        case "bool":
            guard case .bool(let value) = json else { return .unknown }
            return .key(value ? "t" : "f")
        default:
            return .unknown
        }
    }

    /// A filter's values for a column of `type`, normalised as `stored` normalises the image's, or nil when any of
    /// them is a spelling decided only by PostgreSQL.
    static func wanted(type: String, values: [String]) -> [String]? {
        switch type {
        case "text", "varchar", "name":
            return values
        case "uuid":
            var keys: [String] = []
            for value in values {
                guard let digits = self.uuidDigits(value) else { return nil }
                keys.append(digits)
            }
            return keys
        case "int2", "int4", "int8":
            var keys: [String] = []
            for value in values {
                guard let number = Int(value.trimmingASCIISpaces) else { return nil }
                keys.append(String(number))
            }
            return keys
        case "bool":
            var keys: [String] = []
            for value in values {
                guard let flag = self.boolean(value) else { return nil }
                keys.append(flag ? "t" : "f")
            }
            return keys
        default:
            return nil
        }
    }

    /// Whether the JSON value equals one of `values` as PostgreSQL would compare them, or nil when undecidable here.
    private static func decide(type: String, json: JSONValue, values: [String]) -> Bool? {
        switch self.stored(type: type, json: json) {
        case .never: return false
        case .unknown: return nil
        case .key(let key):
            guard let wanted = self.wanted(type: type, values: values) else { return nil }
            return wanted.contains(key)
        }
    }

    /// A uuid's 32 hex digits in lower case, as PostgreSQL reads its input (any case, optional braces, hyphens between
    /// groups of four digits); nil for anything else.
    private static func uuidDigits(_ text: String) -> String? {
        var digits = ""
        for character in text.lowercased() where character != "-" && character != "{" && character != "}" {
            guard character.isHexDigit else { return nil }
            digits.append(character)
        }
        return digits.count == 32 ? digits : nil
    }

    /// PostgreSQL's boolean input spellings (any case, surrounding spaces allowed, unique prefixes of the words).
    private static func boolean(_ text: String) -> Bool? {
        let word = text.trimmingASCIISpaces.lowercased()
        guard !word.isEmpty else { return nil }
        if ["t", "tr", "tru", "true", "y", "ye", "yes", "on", "1"].contains(word) { return true }
        if ["f", "fa", "fal", "fals", "false", "n", "no", "of", "off", "0"].contains(word) { return word == "of" ? nil : false }
        return nil
    }
}

extension String {
    /// The text without leading and trailing ASCII spaces, tabs and newlines.
    fileprivate var trimmingASCIISpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" || first == "\n" || first == "\r" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" || last == "\n" || last == "\r" { scalars.removeLast() }
        return String(scalars)
    }
}
