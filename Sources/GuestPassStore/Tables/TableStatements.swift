public import GuestPassPostgres
public import PostgRESTGrammar

/// What a table request asks the database for, once its request has been parsed and its relation found.
public struct TablePlan: Sendable {
    /// The statement the request becomes: a read (`head`: no body), or one of the writes.
    public enum Action: Equatable, Sendable {
        case read(head: Bool)
        case insert
        /// `PUT`: insert or replace the one row the primary-key filters name (`TableStatements.put`).
        case put
        case update
        case delete
    }

    public let catalog: RelationCatalog
    public let relation: Relation
    public let query: TableQuery
    public let preferences: Preferences
    public let action: Action
    /// What `Accept` asked the body to be.
    public let mediaType: TableMediaType
    /// `;nulls=stripped`: members whose value is null are left out.
    public let stripNulls: Bool
    /// `db-max-rows`.
    public let maxRows: Int
    /// The root range after `limit`/`offset` and the `Range` header.
    public let offset: Int
    public let limit: Int?

    /// The plan of a request the HTTP layer checked (`TableRequest`) against the schema cache's `catalog`.
    public init(
        catalog: RelationCatalog, relation: Relation, query: TableQuery, preferences: Preferences, action: Action,
        mediaType: TableMediaType, stripNulls: Bool, maxRows: Int, offset: Int, limit: Int?
    ) {
        self.catalog = catalog
        self.relation = relation
        self.query = query
        self.preferences = preferences
        self.action = action
        self.mediaType = mediaType
        self.stripNulls = stripNulls
        self.maxRows = maxRows
        self.offset = offset
        self.limit = limit
    }

    /// `Accept: application/vnd.pgrst.object+json`: exactly one row, answered as an object.
    public var singular: Bool { self.mediaType == .object }
    public var wantsCount: Bool { self.preferences.count != nil }
    public var returnsRepresentation: Bool { self.preferences.returnPreference == .representation }
    public var returnsHeadersOnly: Bool { self.preferences.returnPreference == .headersOnly }
}

/// The media type of a table response's body, as `Accept` chose it.
public enum TableMediaType: Sendable, Equatable {
    /// `application/json` (or none): an array of objects.
    case array
    /// `application/vnd.pgrst.object+json`: exactly one row, answered as an object.
    case object
    /// `text/csv`: PostgREST's CSV, a line of the column names (none without a row), then a line a row, each row
    /// PostgreSQL's text of the record without its parentheses (`1,"a b",t`).
    case csv
}

/// The body of an insert or update: the client's JSON text, passed to PostgreSQL untouched as one parameter, and the
/// columns it writes (its keys, or `columns=`), each known to the relation.
public struct TableBody: Sendable {
    /// A JSON array of objects (an object body is wrapped in `[`…`]`).
    public let arrayText: String
    public let columns: [Relation.Column]
    /// The body held no row (`[]`) or no column (`{}` / `[{}]`).
    public let rowCount: Int

    /// A body the HTTP layer parsed strictly (`TableBodyReader`), its columns checked against the relation.
    public init(arrayText: String, columns: [Relation.Column], rowCount: Int) {
        self.arrayText = arrayText
        self.columns = columns
        self.rowCount = rowCount
    }
}

/// The one statement of a table request. Every statement answers one row: `total` (the count asked for, or NULL),
/// `page_total` (rows read or written), `body` (the JSON text PostgreSQL built, or NULL) and `inserted` (rows an upsert
/// inserted rather than updated, or NULL). Identifiers come from the schema cache, values are bound (`TableSQL`); a request
/// the builders cannot express is a `PostgRESTRefusal`.
public enum TableStatements {
    /// A request's statement, its text the request's shape (values are bound): prepared once per connection while there
    /// is room (`reusesPlanWhileRoom`), so that PostgreSQL does not parse, analyse and plan it again on every request of
    /// that shape (about 60 % of PostgreSQL's time for a read of ten rows under row-level security). Every shape
    /// answers the same four columns (and the checks'), whatever the relation, so a later change of a table's columns
    /// re-plans the statement rather than changing its result type.
    static func shaped(_ sql: String, _ parameters: [any PostgresEncodable]) -> PostgresStatement {
        var statement = PostgresStatement(sql, parameters)
        statement.reusesPlanWhileRoom = true
        return statement
    }

    /// `GET`/`HEAD`: the page (at most `db-max-rows`), optionally the total under the same filters.
    public static func read(_ plan: TablePlan) throws -> PostgresStatement {
        var sql = TableSQL()
        let root = try self.readRoot(plan, sql: &sql)
        let from = "FROM \(TableSQL.qualified(plan.relation)) AS \(root.table)\(root.list.joins.joined())" + self.whereClause(root.conditions)
        let page = "SELECT \(root.list.selectList) \(from)\(root.order)\(root.range)"
        var total = "NULL::bigint"
        if plan.wantsCount {
            // The same filters again (their parameters bound anew): a count of what the policies let the caller see.
            // A spread's join never changes the row count (one row a parent), so the count needs none.
            let countConditions =
                sql.conditions(plan.query.root, on: root.table, relation: plan.relation, embeddings: root.list.embeddings)
                + root.list.innerConditions
            total = "(SELECT count(*) FROM \(TableSQL.qualified(plan.relation)) AS \(root.table)\(self.whereClause(countConditions)))"
        }
        let body = plan.action == .read(head: true) ? "NULL::text" : self.bodyExpression(plan, columns: root.list.columns.map(\.name), sql: &sql)
        return self.shaped(
            "SELECT \(total) AS total, count(_t) AS page_total, \(body) AS body, NULL::bigint AS inserted FROM (\(page)) AS _t",
            sql.parameters
        )
    }

    /// The root node of a read, of a table or of a function's rows: its alias (the relation's name), select list, the
    /// WHERE conditions of its filters and `!inner` embeddings, its ORDER BY and its range (at most `db-max-rows`).
    static func readRoot(
        _ plan: TablePlan, sql: inout TableSQL
    ) throws -> (table: String, list: SelectList, conditions: [String], order: String, range: String) {
        let table = TableSQL.quoted(plan.relation.name)
        var select = SelectListBuilder(catalog: plan.catalog, query: plan.query, maxRows: plan.maxRows)
        let list = try select.build(plan.query.select, relation: plan.relation, table: table, path: [], sql: &sql)
        try self.requireEmbedded(plan.query, select.embeddedPaths)
        let conditions = sql.conditions(plan.query.root, on: table, relation: plan.relation, embeddings: list.embeddings) + list.innerConditions
        let order = try sql.orderBy(plan.query.root.order, on: table, of: plan.relation, embeddings: list.embeddings)
        let range = sql.range(limit: min(plan.limit ?? plan.maxRows, plan.maxRows), offset: plan.offset)
        return (table, list, conditions, order, range)
    }

    /// The check a singular request (`application/vnd.pgrst.object+json`) adds over the rows `_t` of a statement that
    /// may write: other than one row raises `PGRST116`, so the transaction rolls back.
    static let singularCheck =
        "CASE WHEN count(_t) <> 1 THEN guestpass_server.refuse_table_result('\(PostgRESTCode.notSingular)', count(_t)) END"

    /// `POST`: insert (or upsert) the body's rows. A merge upsert with a conflict target counts the rows it inserts as
    /// PostgREST does (`upsertCount`), so a view, which has no `xmax`, answers 200 or 201 as a table does.
    public static func insert(_ plan: TablePlan, body: TableBody) throws -> PostgresStatement {
        let target =
            plan.preferences.resolution == nil ? nil : plan.query.onConflict ?? (plan.relation.primaryKey.isEmpty ? nil : plan.relation.primaryKey)
        return try self.insert(plan, body: body, resolution: plan.preferences.resolution, target: target, rowConditions: { _, _ in [] })
    }

    /// The INSERT of `insert` and `put`: the body's rows that pass `rowConditions` (SQL over each row's values, by
    /// column name), upserted on `target` as `resolution` says.
    static func insert(
        _ plan: TablePlan, body: TableBody, resolution: Preferences.Resolution?, target: [String]?,
        rowConditions: ([String: String], inout TableSQL) -> [String]
    ) throws -> PostgresStatement {
        var sql = TableSQL()
        let table = TableSQL.quoted(plan.relation.name)
        let names = body.columns.map { TableSQL.quoted($0.name) }
        let payload = sql.bind(body.arrayText)
        let counting = resolution == .mergeDuplicates && target != nil
        var statement = "INSERT INTO \(TableSQL.qualified(plan.relation)) AS \(table)"
        if body.columns.isEmpty {
            // Rows of defaults only (`{}`): a SELECT of no columns fills every column with its default.
            let conditions = rowConditions([:], &sql) + (counting ? [self.upsertCount(adding: true)] : [])
            statement += " SELECT FROM json_array_elements(\(payload)::json)\(self.whereClause(conditions))"
        } else {
            let rows = self.bodyRows(body, plan: plan, payload: payload, sql: &sql)
            let values = Dictionary(zip(body.columns.map(\.name), rows.values), uniquingKeysWith: { first, _ in first })
            let conditions = rowConditions(values, &sql) + (counting ? [self.upsertCount(adding: true)] : [])
            statement +=
                " (\(names.joined(separator: ", "))) SELECT \(rows.values.joined(separator: ", ")) FROM \(rows.from)"
                + "\(self.whereClause(conditions))\(rows.order)"
        }
        if let target {
            let conflict = target.map(TableSQL.quoted).joined(separator: ", ")
            // The conflict columns are equal on both rows by definition: not setting them needs no UPDATE privilege on
            // them (PostgREST sets every payload column, so an upsert by primary key needs UPDATE on the key). A body
            // of only the conflict columns sets them, as PostgREST does, so that every row sent comes back.
            let others = body.columns.map(\.name).filter { !target.contains($0) }
            let updated = (others.isEmpty ? body.columns.map(\.name) : others).map(TableSQL.quoted)
            if resolution == .mergeDuplicates, !updated.isEmpty {
                statement +=
                    " ON CONFLICT (\(conflict)) DO UPDATE SET " + updated.map { "\($0) = EXCLUDED.\($0)" }.joined(separator: ", ")
                    + " WHERE \(self.upsertCount(adding: false))"
            } else {
                statement += " ON CONFLICT (\(conflict)) DO NOTHING"
            }
        }
        let inserted = counting ? "coalesce(nullif(current_setting('pgrst.inserted', true), '')::bigint, 0)" : "NULL::bigint"
        return try self.mutation(plan, statement, table: table, sql: &sql, inserted: inserted)
    }

    /// PostgREST's count of the rows a merge upsert inserts, in the transaction's setting `pgrst.inserted`: each row
    /// the INSERT proposes adds one (`adding`), each that meets a conflict and is updated instead takes one away. Both
    /// conditions are always true; they are there for their side effect.
    private static func upsertCount(adding: Bool) -> String {
        "set_config('pgrst.inserted', (coalesce(nullif(current_setting('pgrst.inserted', true), '')::int, 0) \(adding ? "+" : "-") 1)::text, true) "
            + (adding ? "<> '0'" : "<> '-1'")
    }

    /// `PATCH`: set the body's columns on the rows the filters match (the body's first row, as PostgREST takes it).
    public static func update(_ plan: TablePlan, body: TableBody) throws -> PostgresStatement {
        var sql = TableSQL()
        let table = TableSQL.quoted(plan.relation.name)
        let payload = sql.bind(body.arrayText)
        let assignments = body.columns.map { "\(TableSQL.quoted($0.name)) = _b.\(TableSQL.quoted($0.name))" }
        let rows = self.bodyRows(body, plan: plan, payload: payload, sql: &sql)
        let values = zip(rows.values, body.columns).map { "\($0) AS \(TableSQL.quoted($1.name))" }
        let conditions = sql.conditions(plan.query.root, on: table, relation: plan.relation)
        let statement =
            "UPDATE \(TableSQL.qualified(plan.relation)) AS \(table) SET \(assignments.joined(separator: ", ")) "
            + "FROM (SELECT \(values.joined(separator: ", ")) FROM \(rows.from)\(rows.order) LIMIT 1) AS _b"
            + self.whereClause(conditions)
        return try self.mutation(plan, statement, table: table, sql: &sql)
    }

    /// `DELETE`: the rows the filters match.
    public static func delete(_ plan: TablePlan) throws -> PostgresStatement {
        var sql = TableSQL()
        let table = TableSQL.quoted(plan.relation.name)
        let conditions = sql.conditions(plan.query.root, on: table, relation: plan.relation)
        let statement = "DELETE FROM \(TableSQL.qualified(plan.relation)) AS \(table)" + self.whereClause(conditions)
        return try self.mutation(plan, statement, table: table, sql: &sql)
    }

    /// `WITH pgrst_source AS (<statement> RETURNING …) SELECT …`: `RETURNING 1` unless rows are wanted back, and then
    /// only the columns the answer reads (`returnedColumns`), so a write needs SELECT on no other column, as in
    /// PostgREST; the representation is built by PostgreSQL from the returned rows (embeddings read the other tables as
    /// they were before the statement). A singular request with other than one row, or more rows than `max-affected`
    /// under `handling=strict`, raises in SQL so the transaction rolls back. `inserted` is the statement's count of
    /// rows an upsert inserted, or NULL.
    private static func mutation(_ plan: TablePlan, _ statement: String, table: String, sql: inout TableSQL, inserted: String = "NULL::bigint") throws
        -> PostgresStatement
    {
        let returning = try " RETURNING " + self.returnedColumns(plan, table: table)
        var select = SelectListBuilder(catalog: plan.catalog, query: plan.query, maxRows: plan.maxRows)
        var body = "NULL::text"
        var list = "1"
        var joins = ""
        var order = ""
        var filter = ""
        if plan.returnsRepresentation {
            let built = try select.build(plan.query.select, relation: plan.relation, table: table, path: [], sql: &sql)
            list = built.selectList
            joins = built.joins.joined()
            // `!inner` embeddings narrow the representation, as they narrow a read.
            filter = self.whereClause(built.innerConditions)
            try self.requireEmbedded(plan.query, select.embeddedPaths)
            order = try sql.orderBy(plan.query.root.order, on: table, of: plan.relation, embeddings: built.embeddings)
            body = self.bodyExpression(plan, columns: built.columns.map(\.name), sql: &sql)
        } else if plan.returnsHeadersOnly, !plan.relation.primaryKey.isEmpty {
            list = plan.relation.primaryKey.map { table + "." + TableSQL.quoted($0) }.joined(separator: ", ")
            body = "json_agg(_t)::text"
        }
        var checks: [String] = []
        if plan.action == .put { checks.append(self.putCheck) }
        if plan.singular { checks.append(self.singularCheck) }
        if plan.preferences.handling == .strict, let most = plan.preferences.maxAffected, plan.action == .update || plan.action == .delete {
            checks.append(
                "CASE WHEN count(_t) > \(sql.bind(String(most)))::bigint THEN guestpass_server.refuse_table_result('\(PostgRESTCode.maxAffected)', count(_t)) END"
            )
        }
        let checked = checks.map { ", " + $0 }.joined()
        return self.shaped(
            "WITH pgrst_source AS (\(statement)\(returning)) SELECT NULL::bigint AS total, count(_t) AS page_total, \(body) AS body, "
                + "\(inserted) AS inserted\(checked) FROM (SELECT \(list) FROM pgrst_source AS \(table)\(joins)\(filter)\(order)) AS _t",
            sql.parameters
        )
    }

    /// The body over the rows `_t` whose columns are named `columns`: a JSON array, or the one object of a singular
    /// request (`json_strip_nulls` for `nulls=stripped`), or PostgREST's CSV (the header bound as a parameter: the
    /// names may be a client's aliases).
    static func bodyExpression(_ plan: TablePlan, columns: [String], sql: inout TableSQL, as mediaType: TableMediaType? = nil) -> String {
        let aggregate = plan.stripNulls ? "json_strip_nulls(json_agg(_t))" : "json_agg(_t)"
        switch mediaType ?? plan.mediaType {
        case .array: return "coalesce(\(aggregate)::text, '[]')"
        case .object: return "coalesce((\(aggregate)->0)::text, 'null')"
        case .csv:
            let header = sql.bind(columns.joined(separator: ","))
            return "CASE WHEN count(_t) = 0 THEN '' ELSE \(header)::text END || E'\\n' || "
                + "coalesce(string_agg(substring(_t::text, 2, length(_t::text) - 2), E'\\n'), '')"
        }
    }

    static func whereClause(_ conditions: [String]) -> String {
        conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
    }

    /// Every embedded filter, order or range names an embedding of `select` (else 400 `PGRST108`, naming the last
    /// embedding of the path as PostgREST does; a relation's name where `select` aliased it is refused with the alias to
    /// use instead, as PostgREST does once legacy target names are off).
    static func requireEmbedded(_ query: TableQuery, _ paths: Set<[String]>) throws {
        for path in query.embedded.keys.sorted(by: { $0.joined(separator: ".") < $1.joined(separator: ".") }) where !paths.contains(path) {
            let name = path.last ?? ""
            if let alias = self.aliasedEmbedding(named: name, under: path.dropLast(), in: query.select) {
                throw PostgRESTRefusal(
                    .badRequest, code: PostgRESTCode.notEmbedded, message: "'\(name)' is not an embedded resource in this request",
                    details: "Target names are not allowed in filters if they have an alias",
                    hint: "Change '\(name)' to '\(alias)' in filters, orders or limits.")
            }
            throw PostgRESTRefusal(
                .badRequest, code: PostgRESTCode.notEmbedded, message: "'\(name)' is not an embedded resource in this request",
                hint: "Verify that '\(name)' is included in the 'select' query parameter.")
        }
    }

    /// The alias `select` gives an embedding of relation `name` at `parent` (a path of embedding names), if any.
    private static func aliasedEmbedding(named name: String, under parent: ArraySlice<String>, in items: [SelectItem]) -> String? {
        let embeddings = items.compactMap { item -> Embedding? in
            if case .embed(let embedding) = item { return embedding }
            return nil
        }
        guard let first = parent.first else { return embeddings.first { $0.relation == name && $0.alias != nil }?.alias }
        guard let child = embeddings.first(where: { $0.name == first }) else { return nil }
        return self.aliasedEmbedding(named: name, under: parent.dropFirst(), in: child.items)
    }
}
