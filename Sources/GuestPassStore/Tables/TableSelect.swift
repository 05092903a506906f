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

    /// The select list of `items` on `relation` aliased `table`, and the conditions an `!inner` embedding adds to the
    /// node's WHERE.
    mutating func build(
        _ items: [SelectItem], relation: Relation, table: String, path: [String], sql: inout TableSQL
    ) throws -> (list: [String], innerConditions: [String]) {
        var list: [String] = []
        var inner: [String] = []
        for item in items {
            switch item {
            case .star:
                list += relation.columns.map { table + "." + TableSQL.quoted($0.name) }
            case .field(let field):
                var expression = sql.expression(field.field, on: table)
                if let cast = field.cast { expression = "CAST(\(expression) AS \(try Self.castType(cast)))" }
                list.append(expression + " AS " + TableSQL.quoted(TableSQL.outputName(field)))
            case .embed(let embedding):
                let (expression, exists) = try self.embed(embedding, parent: relation, parentTable: table, path: path, sql: &sql)
                list.append(expression + " AS " + TableSQL.quoted(embedding.name))
                if let exists { inner.append(exists) }
            }
        }
        return (list, inner)
    }

    /// The scalar subquery of one embedding (an object or `null` for to-one, an array for to-many) and, for `!inner`,
    /// its `EXISTS` test. (Every parameter bound must appear in the statement: PostgreSQL cannot type an unused one.)
    private mutating func embed(
        _ embedding: Embedding, parent: Relation, parentTable: String, path: [String], sql: inout TableSQL
    ) throws -> (expression: String, exists: String?) {
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

        func joinAndFilters(_ alias: String, _ sql: inout TableSQL) -> String {
            let joins = relationship.joins.map { "\(alias).\(TableSQL.quoted($0.target)) = \(parentTable).\(TableSQL.quoted($0.parent))" }
            return (joins + sql.conditions(modifiers, on: alias, relation: target)).joined(separator: " AND ")
        }

        let alias = sql.alias(for: target.name)
        let (list, innerConditions) = try self.build(embedding.items, relation: target, table: alias, path: childPath, sql: &sql)
        let conditions = ([joinAndFilters(alias, &sql)] + innerConditions).joined(separator: " AND ")
        let from = "FROM \(TableSQL.qualified(target)) AS \(alias) WHERE \(conditions)"
        let columns = list.isEmpty ? "" : list.joined(separator: ", ")
        let expression: String
        if relationship.isToOne {
            expression = "(SELECT row_to_json(_e) FROM (SELECT \(columns) \(from) LIMIT 1) AS _e)"
        } else {
            let order = sql.orderBy(modifiers.order, on: alias)
            let range = sql.range(limit: min(modifiers.limit ?? self.maxRows, self.maxRows), offset: modifiers.offset)
            expression = "(SELECT coalesce(json_agg(_e), '[]') FROM (SELECT \(columns) \(from)\(order)\(range)) AS _e)"
        }
        guard embedding.isInner else { return (expression, nil) }
        let existsAlias = sql.alias(for: target.name)
        let exists = "EXISTS (SELECT 1 FROM \(TableSQL.qualified(target)) AS \(existsAlias) WHERE \(joinAndFilters(existsAlias, &sql)))"
        return (expression, exists)
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
