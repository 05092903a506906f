/// What a PostgREST table request asks for, parsed from its query string and headers and not yet checked against the
/// schema: names are the client's text (unquoted, unescaped), values are the client's text, never SQL. The SQL
/// builder resolves names against the schema cache and binds every value as a parameter.
///
/// The grammar is PostgREST's (`ApiRequest/QueryParams.hs`, `docs/references/api/url_grammar.rst`); see
/// `QueryGrammar` for the parser and `Preferences` for the `Prefer` header.

/// A column, optionally followed by a JSON path: `data`, `data->a->>b`, `data->0`.
public struct FieldPath: Sendable, Hashable {
    public var column: String
    public var jsonPath: [JSONPathStep]

    public init(column: String, jsonPath: [JSONPathStep] = []) {
        self.column = column
        self.jsonPath = jsonPath
    }
}

/// One step of a JSON path: `->` keeps JSON, `->>` yields text.
public struct JSONPathStep: Sendable, Hashable {
    public enum Arrow: Sendable, Hashable {
        /// `->`
        case json
        /// `->>`
        case text
    }

    public enum Key: Sendable, Hashable {
        case name(String)
        /// An integer index (`->0`, `->-1`).
        case index(Int)
    }

    public var arrow: Arrow
    public var key: Key

    public init(arrow: Arrow, key: Key) {
        self.arrow = arrow
        self.key = key
    }
}

/// One item of `select=`.
public enum SelectItem: Sendable, Hashable {
    /// `*`
    case star
    /// `alias:col->path::type`
    case field(SelectField)
    /// `alias:relation!hint!inner(items…)` or `...relation!hint!inner(items…)`
    case embed(Embedding)
}

public struct SelectField: Sendable, Hashable {
    public var field: FieldPath
    public var alias: String?
    /// The type after `::`, as written (letters, digits, `_`, space, `$` only; the parser refuses anything else).
    public var cast: String?
    /// `.sum()` …, or `count()` (whose field is `*`).
    public var aggregate: AggregateFunction?
    /// The type after the aggregate's `::`.
    public var aggregateCast: String?

    public init(field: FieldPath, alias: String? = nil, cast: String? = nil, aggregate: AggregateFunction? = nil, aggregateCast: String? = nil) {
        self.field = field
        self.alias = alias
        self.cast = cast
        self.aggregate = aggregate
        self.aggregateCast = aggregateCast
    }
}

/// An aggregate of `select=` (PostgREST's `db-aggregates-enabled`; refused here, as by PostgREST's default).
public enum AggregateFunction: String, Sendable, Hashable {
    case sum, avg, count, max, min
}

/// A relation embedded through a foreign key: `alias:relation!hint(items…)`, `relation!inner(…)`, `...relation(…)`.
public struct Embedding: Sendable, Hashable {
    public var relation: String
    public var alias: String?
    /// `!fk_name` (a foreign key constraint name or a column): which relationship, when several link the tables.
    public var hint: String?
    /// `!inner`: drop parents without a match (else `!left`, the default).
    public var isInner: Bool
    /// `...relation(items…)`: the items answer as the parent's own keys (a to-one target's values, or for a to-many
    /// target one array a key, correlated by position) rather than under one key for the relation. Never aliased.
    public var isSpread: Bool
    public var items: [SelectItem]

    public init(
        relation: String, alias: String? = nil, hint: String? = nil, isInner: Bool = false, isSpread: Bool = false, items: [SelectItem]
    ) {
        self.relation = relation
        self.alias = alias
        self.hint = hint
        self.isInner = isInner
        self.isSpread = isSpread
        self.items = items
    }

    /// The name the embedding answers under and that embedded filters use as their prefix.
    public var name: String { self.alias ?? self.relation }
}

/// A filter operator (PostgREST's `tables_views.rst` "Operators").
public enum FilterOperator: String, Sendable, Hashable, CaseIterable {
    case eq, neq, gt, gte, lt, lte, like, ilike, match, imatch
    case `is`, isdistinct
    case `in`
    case cs, cd, ov, sl, sr, nxl, nxr, adj
    case fts, plfts, phfts, wfts

    /// The operators that take `(any)` / `(all)`.
    public var takesQuantifier: Bool {
        switch self {
        case .eq, .like, .ilike, .gt, .gte, .lt, .lte, .match, .imatch: return true
        default: return false
        }
    }

    /// The full-text-search operators, which take an optional `(config)`.
    public var isFullTextSearch: Bool { [.fts, .plfts, .phfts, .wfts].contains(self) }
}

public enum Quantifier: String, Sendable, Hashable {
    case any, all
}

/// The value of `is.`: a keyword, never a parameter.
public enum IsValue: String, Sendable, Hashable {
    case null, `true`, `false`, unknown
}

/// An operator and its value: `eq.5`, `not.in.(1,2)`, `like(any).{a*,b*}`, `fts(english).cat`, `is.null`.
public struct Condition: Sendable, Hashable {
    public enum Value: Sendable, Hashable {
        /// Everything after `op.`, verbatim (`like`/`ilike` keep `*`; the SQL builder turns it into `%`). For `(any)` /
        /// `(all)` the client's `{a,b}` array literal, verbatim.
        case text(String)
        /// `in.(a,"b,c")`: the items, unquoted and unescaped.
        case list([String])
        /// `is.null` …
        case keyword(IsValue)
    }

    public var negated: Bool
    public var op: FilterOperator
    public var quantifier: Quantifier?
    /// The text search configuration of `fts(english)`.
    public var language: String?
    public var value: Value

    public init(negated: Bool = false, op: FilterOperator, quantifier: Quantifier? = nil, language: String? = nil, value: Value) {
        self.negated = negated
        self.op = op
        self.quantifier = quantifier
        self.language = language
        self.value = value
    }
}

/// `field=condition`.
public struct Filter: Sendable, Hashable {
    public var field: FieldPath
    public var condition: Condition

    public init(field: FieldPath, condition: Condition) {
        self.field = field
        self.condition = condition
    }
}

/// `or=(…)`, `and=(…)`, `not.or=(…)`, nested: `or=(a.eq.1,not.and(b.gt.2,c.is.null))`.
public indirect enum LogicTree: Sendable, Hashable {
    case filter(Filter)
    case group(LogicGroup)
}

public struct LogicGroup: Sendable, Hashable {
    public enum Operator: String, Sendable, Hashable {
        case and, or
    }

    public var op: Operator
    public var negated: Bool
    public var children: [LogicTree]

    public init(op: Operator, negated: Bool = false, children: [LogicTree]) {
        self.op = op
        self.negated = negated
        self.children = children
    }
}

/// One key of `order=`: `col.desc.nullslast`, `data->>a.asc`.
public struct OrderTerm: Sendable, Hashable {
    public enum Direction: String, Sendable, Hashable {
        case asc, desc
    }

    public enum Nulls: String, Sendable, Hashable {
        case first = "nullsfirst"
        case last = "nullslast"
    }

    public var field: FieldPath
    public var direction: Direction?
    public var nulls: Nulls?

    /// `rel(col)`: the column of the to-one embedding `rel` (its name or alias).
    public var relation: String?

    public init(field: FieldPath, direction: Direction? = nil, nulls: Nulls? = nil, relation: String? = nil) {
        self.field = field
        self.direction = direction
        self.nulls = nulls
        self.relation = relation
    }
}

/// The filters, logic trees, order and range of one node: the root relation (`path` empty) or one embedding (`path`
/// its name, `["rel"]` for `rel.col=eq.1`, `rel.order=…`).
public struct NodeModifiers: Sendable, Hashable {
    public var filters: [Filter] = []
    public var logic: [LogicGroup] = []
    public var order: [OrderTerm] = []
    public var limit: Int?
    public var offset: Int?

    public init() {}

    public var isEmpty: Bool { self.filters.isEmpty && self.logic.isEmpty && self.order.isEmpty && self.limit == nil && self.offset == nil }
}

/// Everything a table request's query string says.
public struct TableQuery: Sendable, Hashable {
    /// `select=`; `[.star]` when absent.
    public var select: [SelectItem] = [.star]
    /// The root's modifiers.
    public var root = NodeModifiers()
    /// Modifiers of embedded nodes, by embedding path (one level in v1: `["rel"]`).
    public var embedded: [[String]: NodeModifiers] = [:]
    /// `columns=` (insert/update: which body keys become columns), as given.
    public var columns: [String]?
    /// `on_conflict=`: the unique columns an upsert resolves on.
    public var onConflict: [String]?

    public init() {}
}

/// A grammar error, answered 400 `PGRST100` (PostgREST's shape): `message` like
/// `"failed to parse filter (eqx.1)" (line 1, column 4)`, `details` like `unexpected "x" expecting …`.
public struct QueryGrammarError: Error, Sendable, Hashable {
    /// PostgREST's code: `PGRST100` for parse errors, `PGRST103` for an invalid range (416).
    public var code: String
    public var message: String
    public var details: String?
    public var hint: String?

    public init(code: String = "PGRST100", message: String, details: String? = nil, hint: String? = nil) {
        self.code = code
        self.message = message
        self.details = details
        self.hint = hint
    }
}
