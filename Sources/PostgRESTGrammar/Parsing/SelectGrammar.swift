/// `select=` as PostgREST's `pFieldForest` reads it: items separated by `,` (spaces around skipped), each `*`,
/// `alias:field->path::cast`, an embedding `alias:relation!hint!inner(items…)`, or a spread `...relation!hint!inner(items…)`
/// (no alias: its columns answer under their own names).
///
/// Aggregates (`count()`, `col.sum()::int`) parse; the table API refuses them as PostgREST does while they are
/// disabled (its default). Embeddings nest at most `maximumDepth` deep.
enum SelectGrammar {
    typealias P = Primitive
    typealias N = NameGrammar

    /// The deepest embedding nesting the parser accepts (`a(b(c(…)))` counts one a level).
    static let maximumDepth = 32

    /// The items of `select=`. Unlike PostgREST, whose `sepBy` reads a first item that fails without consuming
    /// anything (`*!hint`, `...rel(*)`) as "no items", only the empty text selects nothing; anything else must start
    /// with an item.
    static func forest(of text: String) -> Parser<[SelectItem]> {
        text.isEmpty ? .pure([]) : Self.tree(depth: 0).separated1(by: P.lexeme(P.char(",")))
    }

    private static func forest(depth: Int) -> Parser<[SelectItem]> { Self.tree(depth: depth).separated(by: P.lexeme(P.char(","))) }

    private static func tree(depth: Int) -> Parser<SelectItem> {
        let children = Parser<[SelectItem]>.lazy {
            depth >= Self.maximumDepth ? .fatal("embedding nested deeper than \(Self.maximumDepth) levels") : Self.forest(depth: depth + 1)
        }
        let embedded = { (head: Parser<Embedding>) in
            head.attempt.flatMap { relation in
                children.between(P.char("("), P.char(")")).map { items in
                    var embedding = relation
                    embedding.items = items
                    return SelectItem.embed(embedding)
                }
            }
        }
        return embedded(Self.spread).or(embedded(Self.relation)).or(Self.field)
    }

    /// `pSpreadRelationSelect` up to (not including) its `(`: `...name!hint!inner`.
    private static var spread: Parser<Embedding> {
        P.lexeme(P.string("...").then(N.fieldName).flatMap { name in Self.embedParameters(relation: name, alias: nil, isSpread: true) })
    }

    /// `pRelationSelect` up to (not including) its `(`.
    private static var relation: Parser<Embedding> {
        P.lexeme(
            Self.alias.flatMap { alias in
                N.fieldName.filter { $0 != "count" }.flatMap { name in Self.embedParameters(relation: name, alias: alias, isSpread: false) }
            })
    }

    /// `pEmbedParams` and the `(` that must follow them: up to two of `!hint`, `!left`, `!inner`.
    private static func embedParameters(relation name: String, alias: String?, isSpread: Bool) -> Parser<Embedding> {
        Self.embedParameter.optional.flatMap { first in
            Self.embedParameter.optional.flatMap { second in
                P.string("(").lookAhead.attempt.map { _ in
                    let parameters = [first, second].compactMap { $0 }
                    let hint = parameters.lazy.compactMap { parameter -> String? in
                        if case .hint(let hint) = parameter { return hint }
                        return nil
                    }.first
                    let join = parameters.lazy.compactMap { parameter -> Bool? in
                        if case .join(let isInner) = parameter { return isInner }
                        return nil
                    }.first
                    return Embedding(relation: name, alias: alias, hint: hint, isInner: join ?? false, isSpread: isSpread, items: [])
                }
            }
        }
    }

    private enum EmbedParameter {
        case hint(String)
        case join(isInner: Bool)
    }

    /// `!left`, `!inner` or `!hint` (the first hint and the first join type of the two allowed win).
    private static var embedParameter: Parser<EmbedParameter> {
        P.char("!").then(
            P.string("left").attempt.map { _ in EmbedParameter.join(isInner: false) }
                .or(P.string("inner").attempt.map { _ in .join(isInner: true) })
                .or(N.fieldName.map { .hint($0) }.attempt))
    }

    /// `alias:` (a single `:`; `::` starts a cast).
    private static var alias: Parser<String?> { N.fieldName.skip(P.char(":").then(P.notFollowedBy(P.char(":")))).attempt.optional }

    /// `pFieldSelect`: `*`, `alias:count()::cast`, or `alias:field->path::cast.sum()::cast`, followed by `)`, `,` or
    /// the end. Aggregates parse (so that they are refused as PostgREST refuses them while they are disabled, 400
    /// `PGRST123`, not as a parse error).
    private static var field: Parser<SelectItem> {
        let end = P.string(")").lookAhead.attempt.then(Parser<Void>.pure(()))
            .or(P.string(",").lookAhead.attempt.then(.pure(())))
            .or(P.endOfInput.attempt)
        let castSuffix = P.string("::").then(N.identifier).optional
        let star = P.string("*").skip(end).attempt.map { _ in SelectItem.star }
        let count = Self.alias.flatMap { alias in
            P.string("count()").then(castSuffix).skip(end).map { aggregateCast in
                SelectItem.field(SelectField(field: FieldPath(column: "*"), alias: alias, aggregate: .count, aggregateCast: aggregateCast))
            }
        }.attempt
        let field = Self.alias.flatMap { alias in
            N.field.flatMap { field in
                castSuffix.flatMap { cast in
                    P.char(".").then(Self.aggregate).skip(P.string("()")).attempt.optional.flatMap { aggregate in
                        castSuffix.skip(end).map { aggregateCast in
                            SelectItem.field(
                                SelectField(field: field, alias: alias, cast: cast, aggregate: aggregate, aggregateCast: aggregateCast))
                        }
                    }
                }
            }
        }
        return P.lexeme(star.or(count).or(field))
    }

    /// `pAggregation`: `sum`, `avg`, `count`, `max`, `min`.
    private static var aggregate: Parser<AggregateFunction> {
        P.string("sum").map { _ in AggregateFunction.sum }
            .or(P.string("avg").map { _ in .avg })
            .or(P.string("count").map { _ in .count })
            .or(P.string("max").attempt.map { _ in .max })
            .or(P.string("min").attempt.map { _ in .min })
    }
}
