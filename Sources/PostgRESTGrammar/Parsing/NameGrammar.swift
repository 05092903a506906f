/// Names, JSON paths and fields, as PostgREST's `pFieldName`, `pJsonPath`, `pField` and `pTreePath` read them.
///
/// A name is either double-quoted (any text; `\x` stands for `x`, so `\"` and `\\` escape) or dash-separated runs of
/// identifier characters (letters, digits, `_`, `$`, space; each run trimmed). A JSON key is quoted or runs of
/// anything but `(-:.,>)`. Names are only text here: the SQL builder quotes them.
enum NameGrammar {
    typealias P = Primitive

    static var delimiter: Parser<Unicode.Scalar> { P.char(".").label("delimiter (.)") }

    /// `"…"` with backslash escapes.
    static var quotedValue: Parser<String> {
        let plain = P.noneOf("\\\"")
        let escaped = P.char("\\").then(P.anyChar)
        return plain.or(escaped).many.between(P.char("\""), P.char("\"")).map { String(String.UnicodeScalarView($0)) }
    }

    /// Letters, digits, `_`, space, `$`, trimmed (`pIdentifier`; also the only characters a `::cast` may use).
    static var identifier: Parser<String> { P.letter.or(P.digit).or(P.oneOf("_ $")).many1.map { Self.trimmed($0) } }

    static var fieldName: Parser<String> { Self.quotedValue.or(Self.dashSeparated(Self.identifier)).label("field name (* or [a..z0..9_$])") }

    static var jsonKeyName: Parser<String> {
        let keyIdentifier = P.noneOf("(-:.,>)").many1.map { Self.trimmed($0) }
        return Self.quotedValue.or(Self.dashSeparated(keyIdentifier)).label("any non reserved character different from: .,>()")
    }

    /// `->key`, `->>key`, `->0`, `->>-1` …; an index must be followed by `->`, `::`, `.`, `,` or the end, else it is
    /// read as a key.
    static var jsonPath: Parser<[JSONPathStep]> {
        let arrow = P.string("->>").attempt.map { _ in JSONPathStep.Arrow.text }.or(P.string("->").attempt.map { _ in .json })
        let indexEnd = P.string("->").lookAhead.attempt.then(.pure(()))
            .or(P.string("::").lookAhead.attempt.then(.pure(())))
            .or(P.string(".").lookAhead.attempt.then(.pure(())))
            .or(P.string(",").lookAhead.attempt.then(.pure(())))
            .or(P.endOfInput.attempt)
        let index = P.char("-").map { _ in "-" }.or(default: "").flatMap { sign in
            P.digit.many1.skip(indexEnd).flatMap { digits -> Parser<JSONPathStep.Key> in
                guard let value = Int(sign + String(String.UnicodeScalarView(digits))) else { return .fatal("JSON array index out of range") }
                return .pure(.index(value))
            }
        }
        let operand = index.attempt.or(Self.jsonKeyName.map { JSONPathStep.Key.name($0) }.attempt)
        return arrow.flatMap { arrow in operand.map { JSONPathStep(arrow: arrow, key: $0) } }.many
    }

    /// `pField`: a name and its JSON path, spaces around skipped.
    static var field: Parser<FieldPath> {
        P.lexeme(Self.fieldName.flatMap { name in Self.jsonPath.or(default: []).map { FieldPath(column: name, jsonPath: $0) } })
    }

    /// `pTreePath`, a filter's (or `order`'s, `limit`'s) key: `rel.sub.col->path` → (["rel", "sub"], col->path).
    static var treePath: Parser<(path: [String], field: FieldPath)> {
        Self.fieldName.separated1(by: Self.delimiter).flatMap { names in
            Self.jsonPath.or(default: []).map { steps in (Array(names.dropLast()), FieldPath(column: names.last ?? "", jsonPath: steps)) }
        }
    }

    /// `pColumns`: `columns=` and `on_conflict=`.
    static var columns: Parser<[String]> { Self.fieldName.separated1(by: P.lexeme(P.char(","))) }

    /// `sepByDash`: runs joined by `-`, where a `-` followed by `>` is an arrow, not a dash.
    private static func dashSeparated(_ run: Parser<String>) -> Parser<String> {
        let dash = P.char("-").then(P.notFollowedBy(P.char(">"))).attempt
        return run.separated1(by: dash).map { $0.joined(separator: "-") }
    }

    /// Haskell's `T.strip`.
    private static func trimmed(_ scalars: [Unicode.Scalar]) -> String {
        let isSpace = { (scalar: Unicode.Scalar) in scalar.properties.isWhitespace }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }), let last = scalars.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
