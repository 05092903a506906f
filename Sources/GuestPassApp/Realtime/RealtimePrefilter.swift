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

    /// Whether the JSON value equals one of `values` as PostgreSQL would compare them, or nil when undecidable here.
    private static func decide(type: String, json: JSONValue, values: [String]) -> Bool? {
        if case .null = json { return false }  // `= x` and `= any(…)` are never true for NULL
        switch type {
        case "text", "varchar", "name":
            guard case .string(let text) = json else { return nil }
            return values.contains(text)
        case "uuid":
            guard case .string(let text) = json, let stored = self.uuidDigits(text) else { return nil }
            var any = false
            for value in values {
                guard let wanted = self.uuidDigits(value) else { return nil }
                if wanted == stored { any = true }
            }
            return any
        case "int2", "int4", "int8":
            guard case .number(let number) = json, let stored = Int(number.text) else { return nil }
            var any = false
            for value in values {
                guard let wanted = Int(value.trimmingASCIISpaces) else { return nil }
                if wanted == stored { any = true }
            }
            return any
        case "bool":
            guard case .bool(let stored) = json else { return nil }
            var any = false
            for value in values {
                guard let wanted = self.boolean(value) else { return nil }
                if wanted == stored { any = true }
            }
            return any
        default:
            return nil
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
