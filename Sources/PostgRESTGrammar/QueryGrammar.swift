/// PostgREST's query-string grammar for table requests (`ApiRequest/QueryParams.hs`): text in, a typed
/// `TableQuery` out, or a `QueryGrammarError` with PostgREST's message, position and `unexpected … expecting …`.
///
/// The grammar is transcribed onto a small Parsec-like combinator engine (`Parser`) so that the same inputs parse,
/// and fail at the same line and column, as in PostgREST. The common shapes (`select=*`, `col=eq.x`, `order=a.desc`,
/// `limit=10`) are read first by a direct scan (`CommonShapes`), which answers what the grammar would or hands the text
/// to it. Like PostgREST, a parameter's parser stops where its
/// grammar ends (`select=id)x` selects `id`). Unlike PostgREST, nesting is bounded (32 levels of logic groups or
/// embeddings), limits must be integers, and integers must fit in `Int`.
public enum QueryGrammar {
    /// Splits a raw query string (the part after `?`, still percent-encoded) into decoded pairs, in order: `&` (and,
    /// as in PostgREST, `;`) separates pairs, the first `=` key from value, `+` is a space, `%XX` is decoded. Empty
    /// pieces and pieces without `=` are skipped (PostgREST ignores a key without a value). Invalid UTF-8 after
    /// decoding, a NUL, or a malformed `%` escape is a `QueryGrammarError` (400 PGRST100).
    public static func pairs(rawQuery: String) throws(QueryGrammarError) -> [(key: String, value: String)] {
        try QueryString.pairs(rawQuery)
    }

    /// PostgREST's canonical query string (`qsCanonical`, sent back in `Content-Location`), of decoded `pairs`.
    public static func canonical(_ pairs: [(key: String, value: String)]) -> String {
        QueryString.canonical(pairs)
    }

    /// Parses the decoded pairs into a `TableQuery`. `apikey` is skipped. `select`, `columns`, `on_conflict` are
    /// those exact keys; a key whose last `.`-separated word is `order`, `limit`, `offset`, `or` or `and` applies to
    /// the embedding its other words name (`rel.order`, `rel.not.or`); every other key is a filter
    /// (`[embedding.]field[->path]`). Repeated filter and logic keys are all kept (ANDed); a repeated
    /// `select`/`order`/`columns`/`on_conflict` keeps the first and a repeated `limit`/`offset` the last (per embedding),
    /// as PostgREST does. `select=` (empty) selects every column, as `*` does (PostgREST's "empty root select").
    /// A negative `offset` is ignored; a negative `limit` is a `PGRST103` error (416).
    /// Parameters are checked in PostgREST's order (order, logic, columns, select, filters, on_conflict, then
    /// limit/offset), so the first error reported is the one PostgREST reports.
    public static func parse(_ pairs: [(key: String, value: String)]) throws(QueryGrammarError) -> TableQuery {
        var parameters = QueryParameters()
        for (key, value) in pairs { parameters.add(key: key, value: value) }
        var query = TableQuery()
        for (key, value) in parameters.orders {
            let path = try Self.embeddingPath(ofKey: key)
            let terms = try Self.read(CommonShapes.order(value), else: Grammars.order, on: value, context: "failed to parse order (\(value))")
            query.modify(path) { $0.order = terms }
        }
        for (key, value) in parameters.logic {
            let (path, op) = try Self.run(Self.logicPath, on: key, context: "failed to parse logic path (\(key))")
            switch try Self.run(Grammars.tree, on: op + value, context: "failed to parse logic tree (\(value))") {
            case .group(let group): query.modify(path) { $0.logic.append(group) }
            case .filter(let filter): query.modify(path) { $0.filters.append(filter) }
            }
        }
        if let columns = parameters.columns {
            query.columns =
                try Self.read(
                    CommonShapes.columns(columns), else: Grammars.columns, on: columns, context: "failed to parse columns parameter (\(columns))")
        }
        if let select = parameters.select {
            query.select =
                try Self.read(
                    CommonShapes.select(select), else: select.isEmpty ? .pure([.star]) : Grammars.select, on: select,
                    context: "failed to parse select parameter (\(select))")
        }
        for (key, value) in parameters.filters {
            let (path, field) = try Self.read(
                CommonShapes.treePath(key), else: Grammars.treePath, on: key, context: "failed to parse tree path (\(key))")
            let condition = try Self.read(
                CommonShapes.condition(value), else: Grammars.filter, on: value, context: "failed to parse filter (\(value))")
            query.modify(path) { $0.filters.append(Filter(field: field, condition: condition)) }
        }
        if let onConflict = parameters.onConflict {
            query.onConflict =
                try Self.read(
                    CommonShapes.columns(onConflict), else: Grammars.columns, on: onConflict,
                    context: "failed to parse on_conflict parameter (\(onConflict))")
        }
        for (key, value) in parameters.limits {
            let path = try Self.embeddingPath(ofKey: key)
            let limit = try Self.integer(value, parameter: "limit")
            guard limit >= 0 else {
                throw QueryGrammarError(
                    code: "PGRST103", message: "Requested range not satisfiable", details: "Limit should be greater than or equal to zero.")
            }
            query.modify(path) { $0.limit = limit }
        }
        for (key, value) in parameters.offsets {
            let path = try Self.embeddingPath(ofKey: key)
            let offset = try Self.integer(value, parameter: "offset")
            query.modify(path) { $0.offset = offset >= 0 ? offset : nil }
        }
        return query
    }

    /// The `Range` request header (`0-19`, `5-`; optional `items=` unit prefix is not PostgREST's, refuse it): the
    /// offset and the limit (nil for an open end). Nil when the header does not parse (PostgREST then ignores it).
    /// A limit below 1 means the upper bound is below the lower (`5-2`): PostgREST answers 416 `PGRST103` then.
    public static func range(header: String) -> (offset: Int, limit: Int?)? {
        let parts = header.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, Self.isDigits(parts[0], allowEmpty: false), Self.isDigits(parts[1], allowEmpty: true),
            let lower = Int(parts[0])
        else { return nil }
        if parts[1].isEmpty { return (lower, nil) }
        guard let upper = Int(parts[1]) else { return nil }
        let (span, overflow) = upper.subtractingReportingOverflow(lower)
        guard !overflow, span < Int.max else { return nil }
        return (lower, span + 1)
    }

    private static func isDigits(_ text: Substring, allowEmpty: Bool) -> Bool {
        (allowEmpty || !text.isEmpty) && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// `shape` when `CommonShapes` read the text, else what `run` answers.
    private static func read<Output>(
        _ shape: Output?, else parser: Parser<Output>, on text: String, context: @autoclosure () -> String
    ) throws(QueryGrammarError) -> Output {
        if let shape { return shape }
        return try Self.run(parser, on: text, context: context())
    }

    /// Runs `parser` on `text` (not necessarily to its end, as Parsec's `parse`), its failure in PostgREST's shape:
    /// message `"<context>" (line L, column C)`, details `unexpected … expecting …`.
    static func run<Output>(_ parser: Parser<Output>, on text: String, context: String) throws(QueryGrammarError) -> Output {
        let input = ParseInput(text)
        let reply = parser.run(input, 0)
        let failure: ParseFailure
        switch reply {
        case .success(let value, _, _, _) where input.fatalFailure == nil: return value
        case .success: failure = input.fatalFailure ?? .unknown(at: 0)
        case .failure(let replyFailure, _): failure = input.fatalFailure ?? replyFailure
        }
        let (line, column) = failure.sourcePosition(in: input.scalars)
        throw QueryGrammarError(message: "\"\(context)\" (line \(line), column \(column))", details: failure.details)
    }

    /// `pLogicPath`: the embedding path of a logic key and its operator (`rel.not.or` → (["rel"], "not.or")).
    private static var logicPath: Parser<(path: [String], op: String)> {
        NameGrammar.fieldName.separated1(by: NameGrammar.delimiter).map { names in
            let op = names.last ?? ""
            return (Array(names.dropLast()).filter { $0 != "not" }, names.contains("not") ? "not." + op : op)
        }
    }

    /// The embedding a modifier key (`rel.order`, `limit`) applies to.
    private static func embeddingPath(ofKey key: String) throws(QueryGrammarError) -> [String] {
        if let path = CommonShapes.embeddingPath(ofKey: key) { return path }
        return try Self.run(NameGrammar.treePath, on: key, context: "failed to parse tree path (\(key))").path
    }

    /// `limit`/`offset`: an optionally negative decimal integer, spaces around allowed, that fits in `Int`.
    private static func integer(_ text: String, parameter: String) throws(QueryGrammarError) -> Int {
        if let value = CommonShapes.integer(text) { return value }
        let digits = Primitive.char("-").map { _ in "-" }.or(default: "").flatMap { sign in
            Primitive.digit.many1.map { sign + String(String.UnicodeScalarView($0)) }
        }
        let context = "failed to parse \(parameter) parameter (\(text))"
        let literal = try Self.run(Primitive.lexeme(digits).skip(Primitive.endOfInput), on: text, context: context)
        guard let value = Int(literal) else {
            throw QueryGrammarError(message: "\"\(context)\" (line 1, column 1)", details: "\(parameter) out of range")
        }
        return value
    }
}

/// The pairs of a query string sorted by what they are, in the order given; the first or the last where only one counts, as PostgREST keeps.
private struct QueryParameters {
    var select: String?
    var columns: String?
    var onConflict: String?
    var orders: [(key: String, value: String)] = []
    var limits: [(key: String, value: String)] = []
    var offsets: [(key: String, value: String)] = []
    var logic: [(key: String, value: String)] = []
    var filters: [(key: String, value: String)] = []

    mutating func add(key: String, value: String) {
        switch key {
        case "apikey": return
        // PostgREST looks the first `select`, `columns`, `on_conflict` and `order` up, and keeps the last `limit`/`offset`.
        case "select": self.select = self.select ?? value
        case "columns": self.columns = self.columns ?? value
        case "on_conflict": self.onConflict = self.onConflict ?? value
        default:
            let lastWord = key.split(separator: ".", omittingEmptySubsequences: false).last.map(String.init) ?? key
            switch lastWord {
            case "order": if !self.orders.contains(where: { $0.key == key }) { self.orders.append((key, value)) }
            case "limit": Self.replace(&self.limits, key: key, value: value)
            case "offset": Self.replace(&self.offsets, key: key, value: value)
            case "or", "and": self.logic.append((key, value))
            default: self.filters.append((key, value))
            }
        }
    }

    /// Keeps one pair a key: the last given.
    private static func replace(_ pairs: inout [(key: String, value: String)], key: String, value: String) {
        pairs.removeAll { $0.key == key }
        pairs.append((key, value))
    }
}

extension TableQuery {
    /// The modifiers of the root (`path` empty) or of one embedding.
    fileprivate mutating func modify(_ path: [String], _ change: (inout NodeModifiers) -> Void) {
        if path.isEmpty {
            change(&self.root)
        } else {
            change(&self.embedded[path, default: NodeModifiers()])
        }
    }
}

/// The grammar's parsers, built once: a parser is an immutable tree of closures and every parse has its own
/// `ParseInput`, so one instance serves every request (building them anew cost about as much as a parse).
/// `nonisolated(unsafe)`: the closures are not marked `@Sendable`, but nothing in them is ever mutated.
enum Grammars {
    nonisolated(unsafe) static let order = LogicGrammar.order
    nonisolated(unsafe) static let tree = LogicGrammar.tree
    nonisolated(unsafe) static let columns = NameGrammar.columns
    nonisolated(unsafe) static let select = SelectGrammar.forest(of: "*")
    nonisolated(unsafe) static let treePath = NameGrammar.treePath
    nonisolated(unsafe) static let filter = FilterGrammar.condition(value: Primitive.rest)
}
