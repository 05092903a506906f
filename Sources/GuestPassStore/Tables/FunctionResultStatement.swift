public import GuestPassPostgres
import PostgRESTGrammar

extension TableStatements {
    /// A function call's rows under the table grammar, as PostgREST answers `rpc('fn').select(…).eq(…).order(…)`:
    /// `plan.relation` is the function's result (`RPCFunction.resultRelation`). The call (`call`, its arguments
    /// already bound as `parameters`) runs once, in a materialized CTE with the root filters, and the page, the count
    /// and the body come from that CTE as a table read's come from its table. A function that returns one row
    /// (`oneRow`) answers an object, as without the grammar; a singular request with other than one row raises in SQL,
    /// so a volatile function's writes roll back.
    public static func functionResult(
        _ plan: TablePlan, call: String, parameters: [any PostgresEncodable], oneRow: Bool
    ) throws -> PostgresStatement {
        var sql = TableSQL(parameters: parameters)
        let table = TableSQL.quoted(plan.relation.name)
        var select = SelectListBuilder(catalog: plan.catalog, query: plan.query, maxRows: plan.maxRows)
        let list = try select.build(plan.query.select, relation: plan.relation, table: table, path: [], sql: &sql)
        try self.requireEmbedded(plan.query, select.embeddedPaths)
        let conditions = sql.conditions(plan.query.root, on: table, relation: plan.relation, embeddings: list.existsTests) + list.innerConditions
        let source = "pgrst_call AS MATERIALIZED (SELECT \(table).* FROM \(call) AS \(table)\(self.whereClause(conditions)))"
        let order = try sql.orderBy(plan.query.root.order, on: table, of: plan.relation, related: list.relatedValues)
        let limit = min(plan.limit ?? plan.maxRows, plan.maxRows)
        let page =
            "SELECT \(list.selectList) FROM pgrst_call AS \(table)\(list.joins.joined())\(order)\(sql.range(limit: limit, offset: plan.offset))"
        let total = plan.wantsCount ? "(SELECT count(*) FROM pgrst_call)" : "NULL::bigint"
        let mediaType: TableMediaType = oneRow && plan.mediaType == .array ? .object : plan.mediaType
        let body =
            plan.action == .read(head: true) ? "NULL::text" : self.bodyExpression(plan, columns: list.columns.map(\.name), sql: &sql, as: mediaType)
        let singular =
            plan.singular
            ? ", CASE WHEN count(_t) <> 1 THEN guestpass_server.refuse_table_result('\(PostgRESTCode.notSingular)', count(_t)) END" : ""
        return PostgresStatement(
            "WITH \(source) SELECT \(total) AS total, count(_t) AS page_total, \(body) AS body, NULL::bigint AS inserted\(singular) "
                + "FROM (\(page)) AS _t",
            sql.parameters
        )
    }
}
