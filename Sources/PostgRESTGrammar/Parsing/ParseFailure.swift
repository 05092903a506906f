/// The error state of the grammar's parser, shaped like Parsec's `ParseError` so that the position and the
/// `unexpected … expecting …` text PostgREST answers come out the same for the same input.
///
/// Positions are indices into the input's Unicode scalars (Haskell's `Char`); `sourcePosition(in:)` turns one into
/// Parsec's line and column (a tab advances to the next multiple of 8, a newline starts a new line).
struct ParseFailure {
    /// One message of an error, in Parsec's four kinds (their order is the order they are shown in).
    enum Message: Equatable {
        /// The token the parser met, as a primitive shows it (`"x"`, or empty for the end of input).
        case systemUnexpected(String)
        /// An explicit `unexpected` (`'x'`, as `notFollowedBy` and `eof` show it).
        case unexpected(String)
        /// What was expected at this position.
        case expected(String)
        /// A free-form message (the grammar's own refusals, e.g. too deep nesting).
        case message(String)

        var rank: Int {
            switch self {
            case .systemUnexpected: return 0
            case .unexpected: return 1
            case .expected: return 2
            case .message: return 3
            }
        }

        var text: String {
            switch self {
            case .systemUnexpected(let text), .unexpected(let text), .expected(let text), .message(let text): return text
            }
        }
    }

    var position: Int
    var messages: [Message]

    /// An error that carries no message yet (Parsec's `unknownError`): it loses every merge against a known one.
    static func unknown(at position: Int) -> ParseFailure { ParseFailure(position: position, messages: []) }

    var isUnknown: Bool { self.messages.isEmpty }

    /// Parsec's `mergeError`: a known error beats an unknown one, the further position wins, equal positions pool
    /// their messages.
    func merged(with other: ParseFailure) -> ParseFailure {
        if other.isUnknown && !self.isUnknown { return self }
        if self.isUnknown && !other.isUnknown { return other }
        if self.position == other.position { return ParseFailure(position: self.position, messages: self.messages + other.messages) }
        return self.position > other.position ? self : other
    }

    /// Parsec's `setExpectErrors` for one label: every `expected` message replaced by `label`.
    func relabelled(_ label: String) -> ParseFailure {
        ParseFailure(position: self.position, messages: [.expected(label)] + self.messages.filter { $0.rank != 2 })
    }

    /// Parsec's `showErrorMessages "or" "unknown parse error" "expecting" "unexpected" "end of input"`, with its
    /// line breaks turned into spaces as PostgREST's `mapError` does.
    var details: String {
        if self.messages.isEmpty { return "unknown parse error" }
        let sorted = self.messages.enumerated().sorted { ($0.element.rank, $0.offset) < ($1.element.rank, $1.offset) }.map(\.element)
        let systemUnexpected = sorted.filter { $0.rank == 0 }
        let unexpected = sorted.filter { $0.rank == 1 }
        let expected = sorted.filter { $0.rank == 2 }
        let messages = sorted.filter { $0.rank == 3 }
        var parts: [String] = []
        if unexpected.isEmpty, let first = systemUnexpected.first {
            parts.append(first.text.isEmpty ? "unexpected end of input" : "unexpected " + first.text)
        }
        parts.append(Self.showMany("unexpected", unexpected))
        parts.append(Self.showMany("expecting", expected))
        parts.append(Self.showMany("", messages))
        return Self.clean(parts).joined(separator: " ")
    }

    /// Parsec's line and column of `position` in `scalars`.
    func sourcePosition(in scalars: [Unicode.Scalar]) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for scalar in scalars.prefix(self.position) {
            switch scalar {
            case "\n":
                line += 1
                column = 1
            case "\t": column += 8 - ((column - 1) % 8)
            default: column += 1
            }
        }
        return (line, column)
    }

    private static func showMany(_ prefix: String, _ messages: [Message]) -> String {
        let texts = Self.clean(messages.map(\.text))
        guard let last = texts.last else { return "" }
        let listed = texts.count == 1 ? last : texts.dropLast().joined(separator: ", ") + " or " + last
        return prefix.isEmpty ? listed : prefix + " " + listed
    }

    /// Drops empty texts and repeats, keeping the first occurrence (Haskell's `nub . filter (not . null)`).
    private static func clean(_ texts: [String]) -> [String] {
        var seen = Set<String>()
        return texts.filter { !$0.isEmpty && seen.insert($0).inserted }
    }
}

/// Haskell's `show` for the texts inside parse errors: a string in double quotes, a character in single quotes,
/// with Haskell's escapes (`\"`, `\\`, `\n`, `\DEL`, `\233` …).
enum HaskellShow {
    static func string(_ scalars: some Sequence<Unicode.Scalar>) -> String {
        let array = Array(scalars)
        var out = "\""
        for (index, scalar) in array.enumerated() {
            if scalar == "\"" {
                out += "\\\""
            } else {
                out += Self.escaped(scalar, next: index + 1 < array.count ? array[index + 1] : nil)
            }
        }
        return out + "\""
    }

    static func character(_ scalar: Unicode.Scalar) -> String {
        scalar == "'" ? "'\\''" : "'" + Self.escaped(scalar, next: nil) + "'"
    }

    private static let asciiNames = [
        "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "a", "b", "t", "n", "v", "f", "r", "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4",
        "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
    ]

    /// Haskell's `showLitChar`, including its `\&` where a numeric escape or `\SO` would run into what follows.
    private static func escaped(_ scalar: Unicode.Scalar, next: Unicode.Scalar?) -> String {
        let value = scalar.value
        if value > 0x7F {
            let isDigitNext = next.map { ("0"..."9").contains($0) } ?? false
            return "\\\(value)" + (isDigitNext ? "\\&" : "")
        }
        if value == 0x7F { return "\\DEL" }
        if scalar == "\\" { return "\\\\" }
        if value >= 0x20 { return String(Character(scalar)) }
        let name = Self.asciiNames[Int(value)]
        return "\\" + name + (name == "SO" && next == "H" ? "\\&" : "")
    }
}
