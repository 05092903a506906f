/// A filter's value, `[not.]op[(any|all)][(config)].value`, as PostgREST's `pOpExpr` reads it.
///
/// - `in.(a,"b,c")`: items end at `,` or `)` unless double-quoted; a lone empty item (`in.()`, `in.("")`) is the
///   empty list, as PostgREST's SQL treats it.
/// - `is.null|not_null|true|false|unknown`, each letter in either case; `is.not_null` is read as `not.is.null`.
/// - `fts(config).query`, `plfts`, `phfts`, `wfts`; `(any)`/`(all)` only after `eq gt gte lt lte like ilike match
///   imatch`.
/// - The value is given by the caller's parser: the rest of the text for a top-level filter, `logicValue` in a tree.
enum FilterGrammar {
    typealias P = Primitive
    typealias N = NameGrammar

    static func condition(value: Parser<String>) -> Parser<Condition> {
        let negation = P.string("not").then(N.delimiter).attempt.map { _ in true }.or(.pure(false))
        return negation.flatMap { negated in
            Self.operation(value: value).map { condition in
                var condition = condition
                condition.negated = negated != condition.negated
                return condition
            }
        }
    }

    /// A value inside a logic tree: a quoted value, a `{…}` array literal kept whole, or text up to `,` or `)`.
    static var logicValue: Parser<String> {
        let array = P.string("{").flatMap { open in
            P.noneOf("{}").many.flatMap { body in P.string("}").map { close in open + String(String.UnicodeScalarView(body)) + close } }
        }
        return Self.quotedItem.attempt.or(array.attempt).or(Self.bareItem)
    }

    private static func operation(value: Parser<String>) -> Parser<Condition> {
        let list = Self.prefixed("in").then(Self.list).map { items in Condition(op: .in, value: .list(items == [""] ? [] : items)) }
        let isKeyword = Self.prefixed("is").then(Self.isValue)
        let isDistinct = Self.prefixed("isdistinct").then(value).map { Condition(op: .isdistinct, value: .text($0)) }
        return list.or(isKeyword).or(isDistinct).or(Self.fullTextSearch(value: value).attempt).or(Self.simple(value: value).attempt)
            .or(Self.quantified(value: value).attempt).label("operator (eq, gt, ...)")
    }

    /// `try (string "in" *> pDelimiter)`
    private static func prefixed(_ name: String) -> Parser<Unicode.Scalar> { P.string(name).then(N.delimiter).attempt }

    private static func choose(_ operators: [FilterOperator]) -> Parser<FilterOperator> {
        operators.dropFirst().reduce(P.string(operators[0].rawValue).attempt.map { _ in operators[0] }) { parser, op in
            parser.or(P.string(op.rawValue).attempt.map { _ in op })
        }
    }

    private static func simple(value: Parser<String>) -> Parser<Condition> {
        Self.choose([.neq, .cs, .cd, .ov, .sl, .sr, .nxr, .nxl, .adj]).label("unknown single value operator").flatMap { op in
            N.delimiter.then(value).map { Condition(op: op, value: .text($0)) }
        }
    }

    private static func quantified(value: Parser<String>) -> Parser<Condition> {
        let quantifier = P.string("any").attempt.map { _ in Quantifier.any }.or(P.string("all").map { _ in .all })
            .between(P.char("("), P.char(")")).attempt.optional
        return Self.choose([.eq, .gte, .gt, .lte, .lt, .like, .ilike, .match, .imatch]).label("unknown single value operator").flatMap { op in
            quantifier.flatMap { quantifier in N.delimiter.then(value).map { Condition(op: op, quantifier: quantifier, value: .text($0)) } }
        }
    }

    private static func fullTextSearch(value: Parser<String>) -> Parser<Condition> {
        let language = N.identifier.between(P.char("("), P.char(")")).attempt.optional
        return Self.choose([.fts, .plfts, .phfts, .wfts]).flatMap { op in
            language.flatMap { language in N.delimiter.then(value).map { Condition(op: op, language: language, value: .text($0)) } }
        }
    }

    private static var isValue: Parser<Condition> {
        let keywords: [(String, Condition)] = [
            ("null", Condition(op: .is, value: .keyword(.null))),
            ("not_null", Condition(negated: true, op: .is, value: .keyword(.null))),
            ("true", Condition(op: .is, value: .keyword(.true))),
            ("false", Condition(op: .is, value: .keyword(.false))),
            ("unknown", Condition(op: .is, value: .keyword(.unknown))),
        ]
        return keywords.dropFirst().reduce(P.caseInsensitive(keywords[0].0).attempt.map { _ in keywords[0].1 }) { parser, keyword in
            parser.or(P.caseInsensitive(keyword.0).attempt.map { _ in keyword.1 })
        }.label("isVal: (null, not_null, true, false, unknown)")
    }

    /// `pListVal`: `(item,item…)`.
    private static var list: Parser<[String]> {
        let item = Self.quotedItem.attempt.or(Self.bareItem)
        return item.separated1(by: P.char(",")).between(P.lexeme(P.char("(")), P.lexeme(P.char(")")))
    }

    /// A quoted item that ends the item (`"a,b"` but not `"a"b`).
    private static var quotedItem: Parser<String> { N.quotedValue.skip(P.notFollowedBy(P.noneOf(",)"))) }

    private static var bareItem: Parser<String> { P.noneOf(",)").many.map { String(String.UnicodeScalarView($0)) } }
}
