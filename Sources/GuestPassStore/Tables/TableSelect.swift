import PostgRESTGrammar

/// The select list of a node, embeddings included, on top of `TableSQL`.
struct SelectListBuilder {
    let catalog: RelationCatalog
    let query: TableQuery
    /// `db-max-rows`: the most rows any to-many node returns.
    let maxRows: Int
    /// The deepest embedding served (PostgREST has no limit; each level is one more subquery per row).
    static let maximumDepth = 3
    /// The embedding paths the select list contains (filters, orders and limits must name one of them).
    private(set) var embeddedPaths: Set<[String]> = []

    init(catalog: RelationCatalog, query: TableQuery, maxRows: Int) {
        self.catalog = catalog
        self.query = query
        self.maxRows = maxRows
    }

    /// The select list of `items` on `relation` aliased `table`, with the lateral joins its spreads add to the node's
    /// FROM and the conditions its `!inner` embeddings add to the node's WHERE.
    mutating func build(_ items: [SelectItem], relation: Relation, table: String, path: [String], sql: inout TableSQL) throws -> SelectList {
        var built = SelectList()
        for item in items {
            switch item {
            case .star:
                built.columns += relation.columns.map { (Self.represented($0, table + "." + TableSQL.quoted($0.name)), $0.name) }
            case .field(let field):
                guard field.aggregate == nil else {
                    // PostgREST's default (`db-aggregates-enabled` off): an aggregate would let any caller run
                    // whole-table computations.
                    throw PostgRESTRefusal(
                        .badRequest, code: PostgRESTCode.aggregatesNotAllowed, message: "Use of aggregate functions is not allowed")
                }
                var expression = sql.expression(field.field, on: table, relation: relation)
                if field.field.jsonPath.isEmpty, let column = relation.column(field.field.column) {
                    expression = Self.represented(column, expression)
                }
                // A cast applies on top of the representation (`clr:label_color::text` is the text of its JSON).
                if let cast = field.cast { expression = "CAST(\(expression) AS \(try Self.castType(cast)))" }
                built.columns.append((expression, TableSQL.outputName(field)))
            case .embed(let embedding):
                let node = try self.node(embedding, parent: relation, parentTable: table, path: path, sql: &sql)
                if embedding.isSpread {
                    let spread = try self.spread(node, sql: &sql)
                    built.columns += spread.columns
                    built.joins.append(spread.join)
                } else if !Self.selectsNothing(embedding.items) {
                    built.columns.append((try self.embedded(node, sql: &sql), embedding.name))
                }
                if embedding.isInner { built.innerConditions.append(node.reference.exists(&sql)) }
                built.embeddings[embedding.name] = node.reference
            }
        }
        return built
    }

    /// A column's value as an answer shows it: through its data representation (the function of its type's cast to
    /// `json`) when it has one, else as it is.
    static func represented(_ column: Relation.Column, _ expression: String) -> String {
        column.representationFormatter.map { "\($0)(\(expression))" } ?? expression
    }

    /// Whether an embedding of `items` selects no column at any depth (`rel()`, `rel(other())`): PostgREST leaves it
    /// out of the answer; it still filters through `!inner` or `rel=not.is.null`.
    static func selectsNothing(_ items: [SelectItem]) -> Bool {
        items.allSatisfy { item in
            guard case .embed(let embedding) = item else { return false }
            return Self.selectsNothing(embedding.items)
        }
    }

    /// One embedded or spread relation: its select list on the target under a fresh alias, the FROM … WHERE of its
    /// rows (joined to the parent, with the embedded filters and its own children's joins and `!inner` conditions),
    /// and its reference for the parent's filters and orders. The rows and the reference's SQL are built where they
    /// are used: every parameter bound must appear in the statement (PostgreSQL cannot type an unused one).
    private mutating func node(
        _ embedding: Embedding, parent: Relation, parentTable: String, path: [String], sql: inout TableSQL
    ) throws -> EmbeddedNode {
        let childPath = path + [embedding.name]
        guard childPath.count <= Self.maximumDepth else {
            throw PostgRESTRefusal(
                .badRequest, code: PostgRESTCode.notImplemented, message: "Feature not implemented",
                details: "Embeddings nest at most \(Self.maximumDepth) levels deep")
        }
        self.embeddedPaths.insert(childPath)
        let relationship = try self.catalog.relationship(from: parent, to: embedding.relation, hint: embedding.hint)
        let target = relationship.target
        let modifiers = self.query.embedded[childPath] ?? NodeModifiers()
        let alias = sql.alias(for: target.name)
        let list = try self.build(embedding.items, relation: target, table: alias, path: childPath, sql: &sql)
        let maxRows = self.maxRows

        /// `FROM target AS alias [JOIN junction …]` (or the function's rows) and the WHERE conditions of the join and the
        /// embedded filters (`TRUE` when there are none).
        let joinAndFilters = { (alias: String, sql: inout TableSQL) -> (from: String, conditions: String) in
            let source = relationship.source(target: alias, parent: parent, parentTable: parentTable, sql: &sql)
            let conditions = source.conditions + sql.conditions(modifiers, on: alias, relation: target, embeddings: list.embeddings)
            return (source.from, conditions.isEmpty ? "TRUE" : conditions.joined(separator: " AND "))
        }
        return EmbeddedNode(
            isToOne: relationship.isToOne, list: list,
            rows: { sql throws in
                let joined = joinAndFilters(alias, &sql)
                let conditions = ([joined.conditions] + list.innerConditions).joined(separator: " AND ")
                let from = "\(joined.from)\(list.joins.joined()) WHERE \(conditions)"
                guard !relationship.isToOne else { return from + " LIMIT 1" }
                let order = try sql.orderBy(modifiers.order, on: alias, of: target, embeddings: list.embeddings)
                return from + order + sql.range(limit: min(modifiers.limit ?? maxRows, maxRows), offset: modifiers.offset)
            },
            reference: TableSQL.EmbeddingReference(
                // Under the node's own alias, so that its `!inner` children's conditions (built on it, their parameters
                // bound once) hold here too: a row exists only with the rows its inner embeddings require.
                exists: { sql in
                    let joined = joinAndFilters(alias, &sql)
                    let conditions = ([joined.conditions] + list.innerConditions).joined(separator: " AND ")
                    return "EXISTS (SELECT 1 \(joined.from) WHERE \(conditions))"
                },
                value: relationship.isToOne
                    ? { field, sql in
                        let valueAlias = sql.alias(for: target.name)
                        let joined = joinAndFilters(valueAlias, &sql)
                        return "(SELECT \(sql.expression(field, on: valueAlias, relation: target)) \(joined.from) WHERE \(joined.conditions) LIMIT 1)"
                    } : nil))
    }

    /// An embedding's scalar subquery: an object or `null` for a to-one target, an array (`[]` for none) for a to-many.
    private func embedded(_ node: EmbeddedNode, sql: inout TableSQL) throws -> String {
        let rows = "SELECT \(node.list.selectList) \(try node.rows(&sql))"
        return node.isToOne
            ? "(SELECT row_to_json(_e) FROM (\(rows)) AS _e)"
            : "(SELECT coalesce(json_agg(_e), '[]') FROM (\(rows)) AS _e)"
    }

    /// A spread's lateral join and the columns it lifts into the parent: a to-one target's values (`null` without a
    /// match), or for a to-many target one JSON array a column, all aggregated in one pass over the same ordered rows
    /// so that their positions correspond. The join's columns are named by position, so that two spread columns of
    /// one name (which PostgREST allows) never make a reference ambiguous.
    private func spread(_ node: EmbeddedNode, sql: inout TableSQL) throws -> (columns: [(expression: String, name: String)], join: String) {
        let alias = sql.alias(for: "spread")
        let positional = node.list.columns.indices.map { TableSQL.quoted("c\($0 + 1)") }
        let inner = zip(node.list.columns, positional).map { "\($0.0.expression) AS \($0.1)" }.joined(separator: ", ")
        let rows = "SELECT \(inner) \(try node.rows(&sql))"
        let subquery: String
        if node.isToOne {
            subquery = rows
        } else {
            // GROUP BY (): one row even when the spread selects no column (an aggregate-free select would give one per row).
            let arrays = positional.map { "coalesce(json_agg(_s.\($0)), '[]') AS \($0)" }.joined(separator: ", ")
            subquery = "SELECT \(arrays) FROM (\(rows)) AS _s GROUP BY ()"
        }
        let columns = zip(node.list.columns, positional).map { (alias + "." + $0.1, $0.0.name) }
        return (columns, " LEFT JOIN LATERAL (\(subquery)) AS \(alias) ON TRUE")
    }

    /// The type of `col::type` as a quoted identifier: SQL's spellings mapped to their catalog names
    /// (`integer` → `int4`), anything that is not then a single name refused.
    static func castType(_ written: String) throws -> String {
        let words = written.lowercased().split(separator: " ").joined(separator: " ")
        let aliases = [
            "integer": "int4", "int": "int4", "smallint": "int2", "bigint": "int8", "real": "float4", "float": "float8",
            "double precision": "float8", "boolean": "bool", "decimal": "numeric", "dec": "numeric", "character varying": "varchar",
            "character": "bpchar", "char": "bpchar", "timestamp with time zone": "timestamptz", "timestamp without time zone": "timestamp",
            "time with time zone": "timetz", "time without time zone": "time",
        ]
        let name = aliases[words] ?? words
        guard !name.isEmpty, !name.contains(" ") else {
            throw PostgRESTRefusal(.badRequest, code: PostgRESTCode.queryParse, message: "Unknown type in cast: \(written)")
        }
        return TableSQL.quoted(name)
    }
}

/// A node's select list as built: its columns, the lateral joins its spreads add to its FROM, the conditions its
/// `!inner` embeddings add to its WHERE, and its embeddings by the name its filters and orders use.
struct SelectList {
    var columns: [(expression: String, name: String)] = []
    var joins: [String] = []
    var innerConditions: [String] = []
    var embeddings: [String: TableSQL.EmbeddingReference] = [:]

    /// `expression AS "name", …` (empty for no column: `SELECT FROM …` is valid and gives `{}` per row).
    var selectList: String { self.columns.map { "\($0.expression) AS \(TableSQL.quoted($0.name))" }.joined(separator: ", ") }
}

/// An embedded or spread relation (see `SelectListBuilder.node`).
private struct EmbeddedNode {
    let isToOne: Bool
    let list: SelectList
    /// `FROM target AS alias [its spreads' joins] WHERE join AND filters AND its !inner conditions [ORDER, LIMIT …]`.
    let rows: (inout TableSQL) throws -> String
    /// Its existence test and, to-one, a column's value (see `TableSQL.EmbeddingReference`).
    let reference: TableSQL.EmbeddingReference
}
