public import GuestPassPostgres

extension TableStatements {
    /// A function call's rows under the table grammar, as PostgREST answers `rpc('fn').select(…).eq(…).order(…)`:
    /// `plan.relation` is the function's result (`RPCFunction.resultRelation(in:)`). The call (`call`, its arguments
    /// already bound as `parameters`) runs once, in a materialized CTE with the root filters, and the page, the count
    /// and the body come from that CTE as a table read's come from its table. A function that returns one row
    /// (`oneRow`) answers an object, as without the grammar; a singular request with other than one row raises in SQL,
    /// so a volatile function's writes roll back.
    public static func functionResult(
        _ plan: TablePlan, call: String, parameters: [any PostgresEncodable], oneRow: Bool
    ) throws -> PostgresStatement {
        var sql = TableSQL(parameters: parameters)
        let root = try self.readRoot(plan, sql: &sql)
        let source = "pgrst_call AS MATERIALIZED (SELECT \(root.table).* FROM \(call) AS \(root.table)\(self.whereClause(root.conditions)))"
        let page = "SELECT \(root.list.selectList) FROM pgrst_call AS \(root.table)\(root.list.joins.joined())\(root.order)\(root.range)"
        let total = plan.wantsCount ? "(SELECT count(*) FROM pgrst_call)" : "NULL::bigint"
        let mediaType: TableMediaType = oneRow && plan.mediaType == .array ? .object : plan.mediaType
        let body =
            plan.action == .read(head: true)
            ? "NULL::text" : self.bodyExpression(plan, columns: root.list.columns.map(\.name), sql: &sql, as: mediaType)
        let singular = plan.singular ? ", " + self.singularCheck : ""
        return self.shaped(
            "WITH \(source) SELECT \(total) AS total, count(_t) AS page_total, \(body) AS body, NULL::bigint AS inserted\(singular) "
                + "FROM (\(page)) AS _t",
            sql.parameters
        )
    }
}
