import GuestPassPostgres
import PostgRESTGrammar
import Foundation

/// SQL text of one table request under construction: identifiers come from the schema cache and are quoted, every
/// client value becomes a bind parameter of unknown type (`$n`, OID 0), so PostgreSQL infers it from the column it is
/// compared with, exactly as PostgREST does. Nothing a client sends is ever spliced into the text.
struct TableSQL {
    /// The parameters bound so far, in order.
    private(set) var parameters: [any PostgresEncodable] = []
    /// Table aliases handed out so far (an embedding's alias must be unique in the statement).
    private var aliasCount = 0

    /// A statement whose first parameters are already bound (a function call's arguments, `$1`…).
    init(parameters: [any PostgresEncodable] = []) { self.parameters = parameters }

    /// Binds `value` and returns its placeholder.
    mutating func bind(_ value: String?) -> String {
        self.parameters.append(value)
        return "$\(self.parameters.count)"
    }

    /// A fresh quoted alias for a relation named `name` (`"readings_1"`).
    mutating func alias(for name: String) -> String {
        self.aliasCount += 1
        return Self.quoted("\(name)_\(self.aliasCount)")
    }

    /// `identifier` as a quoted SQL identifier (`"` doubled).
    static func quoted(_ identifier: String) -> String { RPCStatement.quoted(identifier) }

    /// `"schema"."name"`.
    static func qualified(_ relation: Relation) -> String { self.quoted(relation.schema) + "." + self.quoted(relation.name) }

    /// The row of `relation` aliased `table` as the argument of a function of that row (a computed field or
    /// relationship): `ROW("t"."a", …)::"s"."rel"`, rebuilt from its columns so that it types as the relation's row
    /// from a CTE of returned rows too, not only from the table itself.
    static func row(of relation: Relation, on table: String) -> String {
        "ROW(\(relation.columns.map { table + "." + self.quoted($0.name) }.joined(separator: ", ")))::\(self.qualified(relation))"
    }

    // MARK: Fields

    /// The SQL of `field` on `relation` aliased `table`: `"t"."col"`, or `to_jsonb("t"."col")->$1->>$2` along a
    /// JSON path (keys bound as text, indexes written as integers). A name that is no column but one of the relation's
    /// computed fields is its function of the row (`row(of:on:)`).
    mutating func expression(_ field: FieldPath, on table: String, relation: Relation? = nil) -> String {
        var sql = table + "." + Self.quoted(field.column)
        if let relation, relation.column(field.column) == nil, let schema = relation.computedFields[field.column] {
            sql = "\(Self.quoted(schema)).\(Self.quoted(field.column))(\(Self.row(of: relation, on: table)))"
        }
        guard !field.jsonPath.isEmpty else { return sql }
        sql = "to_jsonb(\(sql))"
        for step in field.jsonPath {
            let arrow = step.arrow == .json ? "->" : "->>"
            switch step.key {
            case .name(let key): sql += "\(arrow)\(self.bind(key))::text"
            case .index(let index): sql += "\(arrow)(\(index))"
            }
        }
        return sql
    }

    /// The name a selected field answers under: its alias, else the last JSON key, else the column.
    static func outputName(_ field: SelectField) -> String {
        if let alias = field.alias { return alias }
        if case .name(let key)? = field.field.jsonPath.last?.key { return key }
        return field.field.column
    }

    // MARK: Filters

    /// One of a node's embeddings, as the node's filters and orders reach it by its name: the existence test of a
    /// matching row (`EXISTS (SELECT 1 FROM … WHERE join AND filters)`, for `rel=not.is.null` and `!inner`) and, for a
    /// to-one embedding only, a column's value in its one row under its filters (`order=rel(col)`). Both bind their
    /// parameters where they are used.
    struct EmbeddingReference {
        let exists: (inout TableSQL) -> String
        let value: ((FieldPath, inout TableSQL) -> String)?
    }

    /// The SQL of `filter` on the relation aliased `table` (`relation` gives column types: full-text search wraps a
    /// column or computed field that is not a `tsvector`, or a domain over one, in `to_tsvector`).
    /// `embeddings` are the node's embeddings by name: `rel=is.null` is a `NOT EXISTS` of a matching row (an
    /// anti-join), `rel=not.is.null` an `EXISTS`, as PostgREST reads a null filter on an embedding's name.
    mutating func condition(_ filter: Filter, on table: String, relation: Relation?, embeddings: [String: EmbeddingReference] = [:]) -> String {
        let condition = filter.condition
        if filter.field.jsonPath.isEmpty, condition.value == .keyword(.null), let embedding = embeddings[filter.field.column] {
            let test = embedding.exists(&self)
            return condition.negated ? test : "NOT \(test)"
        }
        let lhs = self.expression(filter.field, on: table, relation: relation)
        // A domain with a cast from text reads the filter's values through it (PostgREST's data representations).
        let parser = filter.field.jsonPath.isEmpty ? relation?.column(filter.field.column)?.representationTextParser : nil
        let sql: String
        switch condition.value {
        case .keyword(let keyword):
            sql = "\(lhs) IS \(keyword.rawValue.uppercased())"
        case .list(let items):
            let array = self.bind(Self.arrayLiteral(items))
            sql = parser.map { "\(lhs) = ANY(ARRAY(SELECT \($0)(_v) FROM unnest(\(array)::text[]) AS _v))" } ?? "\(lhs) = ANY(\(array))"
        case .text(let text):
            sql = self.comparison(
                lhs, condition, text, columnType: filter.field.jsonPath.isEmpty ? relation?.baseType(of: filter.field.column) : nil, parser: parser)
        }
        return condition.negated ? "NOT (\(sql))" : sql
    }

    private mutating func comparison(_ lhs: String, _ condition: Condition, _ text: String, columnType: String?, parser: String?) -> String {
        let pattern = { (value: String) in value.replacingOccurrences(of: "*", with: "%") }
        if let quantifier = condition.quantifier {
            let value = [.like, .ilike].contains(condition.op) ? pattern(text) : text
            return "\(lhs) \(Self.operatorSQL(condition.op)) \(quantifier.rawValue.uppercased())(\(self.bind(value)))"
        }
        switch condition.op {
        case .like, .ilike: return "\(lhs) \(Self.operatorSQL(condition.op)) \(self.bind(pattern(text)))"
        case .isdistinct: return "\(lhs) IS DISTINCT FROM \(self.value(text, parser: parser))"
        case .fts, .plfts, .phfts, .wfts:
            let function = ["fts": "to_tsquery", "plfts": "plainto_tsquery", "phfts": "phraseto_tsquery", "wfts": "websearch_to_tsquery"][
                condition.op.rawValue]!
            let language = condition.language.map { self.bind($0) + "::regconfig, " } ?? ""
            let vector = columnType == "tsvector" ? lhs : "to_tsvector(\(language)\(lhs))"
            guard condition.op == .fts else { return "\(vector) @@ \(function)(\(language)\(self.bind(text)))" }
            // to_tsquery's syntax can be refused: parsed once, a refusal answered as PostgREST's parse error.
            return "\(vector) @@ (SELECT guestpass_server.parse_tsquery(\(condition.language == nil ? "NULL, " : language)\(self.bind(text))))"
        case .in: return "\(lhs) = ANY(\(self.bind(text)))"
        case .is: return "\(lhs) IS NULL"
        case .eq, .neq, .gt, .gte, .lt, .lte: return "\(lhs) \(Self.operatorSQL(condition.op)) \(self.value(text, parser: parser))"
        default: return "\(lhs) \(Self.operatorSQL(condition.op)) \(self.bind(text))"
        }
    }

    /// A filter's value, bound, and read through `parser` (a domain's cast from text) when there is one.
    private mutating func value(_ text: String, parser: String?) -> String {
        let bound = self.bind(text)
        return parser.map { "\($0)(\(bound)::text)" } ?? bound
    }

    /// The SQL operator of a comparison.
    static func operatorSQL(_ op: FilterOperator) -> String {
        switch op {
        case .eq: return "="
        case .neq: return "<>"
        case .gt: return ">"
        case .gte: return ">="
        case .lt: return "<"
        case .lte: return "<="
        case .like: return "LIKE"
        case .ilike: return "ILIKE"
        case .match: return "~"
        case .imatch: return "~*"
        case .cs: return "@>"
        case .cd: return "<@"
        case .ov: return "&&"
        case .sl: return "<<"
        case .sr: return ">>"
        case .nxr: return "&<"
        case .nxl: return "&>"
        case .adj: return "-|-"
        case .is, .isdistinct, .in, .fts, .plfts, .phfts, .wfts: return "="
        }
    }

    /// The SQL of a logic tree.
    mutating func logic(_ group: LogicGroup, on table: String, relation: Relation?, embeddings: [String: EmbeddingReference] = [:]) -> String {
        let parts = group.children.map { child -> String in
            switch child {
            case .filter(let filter): return self.condition(filter, on: table, relation: relation, embeddings: embeddings)
            case .group(let inner): return self.logic(inner, on: table, relation: relation, embeddings: embeddings)
            }
        }
        let joined = parts.isEmpty ? (group.op == .and ? "TRUE" : "FALSE") : parts.joined(separator: group.op == .and ? " AND " : " OR ")
        return group.negated ? "NOT (\(joined))" : "(\(joined))"
    }

    /// The conditions of a node's modifiers, ANDed (empty: none); `embeddings` as for `condition`.
    mutating func conditions(
        _ modifiers: NodeModifiers, on table: String, relation: Relation?, embeddings: [String: EmbeddingReference] = [:]
    ) -> [String] {
        modifiers.filters.map { self.condition($0, on: table, relation: relation, embeddings: embeddings) }
            + modifiers.logic.map { self.logic($0, on: table, relation: relation, embeddings: embeddings) }
    }

    /// ` ORDER BY …` (empty without terms) on the node of `relation` aliased `table`, whose embeddings by name are
    /// `embeddings`: a related order (`order=rel(col)`) on a to-many one is 400 `PGRST118`, on a name that is no
    /// embedding 400 `PGRST108`, as in PostgREST.
    mutating func orderBy(
        _ terms: [OrderTerm], on table: String, of relation: Relation, embeddings: [String: EmbeddingReference]
    ) throws -> String {
        guard !terms.isEmpty else { return "" }
        let keys = try terms.map { term -> String in
            var key: String
            if let name = term.relation {
                guard let embedding = embeddings[name] else {
                    throw PostgRESTRefusal(
                        .badRequest, code: PostgRESTCode.notEmbedded, message: "'\(name)' is not an embedded resource in this request",
                        hint: "Verify that '\(name)' is included in the 'select' query parameter.")
                }
                guard let value = embedding.value else {
                    throw PostgRESTRefusal(
                        .badRequest, code: PostgRESTCode.relatedOrderNotToOne, message: "A related order on '\(name)' is not possible",
                        details: "'\(relation.name)' and '\(name)' do not form a many-to-one or one-to-one relationship")
                }
                key = value(term.field, &self)
            } else {
                key = self.expression(term.field, on: table, relation: relation)
            }
            if let direction = term.direction { key += " " + direction.rawValue.uppercased() }
            if let nulls = term.nulls { key += nulls == .first ? " NULLS FIRST" : " NULLS LAST" }
            return key
        }
        return " ORDER BY " + keys.joined(separator: ", ")
    }

    /// ` LIMIT $n OFFSET $m` for the values given.
    mutating func range(limit: Int?, offset: Int?) -> String {
        var sql = ""
        if let limit { sql += " LIMIT \(self.bind(String(limit)))::bigint" }
        if let offset, offset > 0 { sql += " OFFSET \(self.bind(String(offset)))::bigint" }
        return sql
    }

    /// A PostgreSQL array literal of `items`, every element double-quoted with `\` and `"` escaped.
    static func arrayLiteral(_ items: [String]) -> String {
        "{"
            + items.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }.joined(
                separator: ",") + "}"
    }
}
