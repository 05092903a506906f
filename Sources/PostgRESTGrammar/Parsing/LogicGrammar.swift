/// Logic trees (`or=(…)`, `and=(…)`, `not.or=(…)`, nested) and `order=`, as PostgREST's `pLogicTree` and `pOrder`
/// read them.
enum LogicGrammar {
    typealias P = Primitive
    typealias N = NameGrammar

    /// The deepest nesting of groups accepted (`or=(…)` is depth 1); deeper trees fail to parse rather than recurse.
    static let maximumDepth = 32

    /// A tree as PostgREST reads the key's operator followed by the value (`or` + `(a.eq.1,b.gt.2)`): a group, or —
    /// when the text reads as one — a single filter (`or=.eq.1` filters a column named `or`).
    static var tree: Parser<LogicTree> { Self.tree(depth: 1) }

    private static func tree(depth: Int) -> Parser<LogicTree> {
        let leaf = N.field.skip(N.delimiter).flatMap { field in
            FilterGrammar.condition(value: FilterGrammar.logicValue).map { LogicTree.filter(Filter(field: field, condition: $0)) }
        }
        let negation = P.string("not").then(N.delimiter).attempt.map { _ in true }.or(.pure(false)).label("negation operator (not)")
        let logicOperator = P.string("and").attempt.map { _ in LogicGroup.Operator.and }.or(P.string("or").map { _ in .or })
            .label("logic operator (and, or)")
        let children = Parser<[LogicTree]>.lazy { Self.tree(depth: depth + 1).separated1(by: P.lexeme(P.char(","))) }
        guard depth <= Self.maximumDepth else { return leaf.attempt.or(.fatal("logic tree nested deeper than \(Self.maximumDepth) levels")) }
        let group = negation.flatMap { negated in
            logicOperator.flatMap { op in
                children.between(P.lexeme(P.char("(")), P.lexeme(P.char(")"))).map {
                    LogicTree.group(LogicGroup(op: op, negated: negated, children: $0))
                }
            }
        }
        return leaf.attempt.or(group)
    }

    /// `pOrder`: `field[.asc|.desc][.nullsfirst|.nullslast]` or, for a to-one embedding's column,
    /// `rel(field)[.asc|.desc][…]` (`pOrderRelationTerm`, tried first), comma-separated.
    static var order: Parser<[OrderTerm]> {
        let end = P.char(",").lookAhead.attempt.then(Parser<Void>.pure(())).or(P.endOfInput.attempt)
        let direction = Self.keyword("asc", OrderTerm.Direction.asc).or(Self.keyword("desc", .desc))
        let nulls = Self.keyword("nullsfirst", OrderTerm.Nulls.first).or(Self.keyword("nullslast", .last))
        let rest = { (relation: String?, field: FieldPath) in
            direction.optional.flatMap { direction in
                nulls.optional.skip(end).or(end.map { _ in nil }).map {
                    OrderTerm(field: field, direction: direction, nulls: $0, relation: relation)
                }
            }
        }
        let relationTerm = N.fieldName.flatMap { relation in
            N.field.between(P.char("("), P.char(")")).flatMap { field in rest(relation, field) }
        }
        let term = N.field.flatMap { field in rest(nil, field) }
        return P.lexeme(relationTerm.attempt.or(term)).separated1(by: P.char(","))
    }

    /// `try (pDelimiter *> string word)`
    private static func keyword<Value>(_ word: String, _ value: Value) -> Parser<Value> {
        N.delimiter.then(P.string(word)).attempt.map { _ in value }
    }
}
