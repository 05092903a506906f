public import GuestPassPostgres
public import PostgRESTGrammar

extension TableStatements {
    /// `PUT /<table>?<pk>=eq.<value>…`: insert or replace the one row the URL names, as PostgREST's single upsert
    /// does. The filters must be exactly the relation's primary-key columns, each with a plain `eq` (else 405
    /// `PGRST105`; a relation without a primary key is refused so too), and `limit`/`offset` are refused (400
    /// `PGRST114`). Of the body's rows, those whose key values equal the URL's are upserted on the primary key (every
    /// other column of the body set); anything but exactly one such row raises `PGRST115`, so nothing is written.
    /// The answer is 201 when the row was inserted, 200 when it replaced one (with `return=representation`), else 204.
    public static func put(_ plan: TablePlan, body: TableBody) throws -> PostgresStatement {
        let root = plan.query.root
        if root.limit != nil || root.offset != nil {
            throw PostgRESTRefusal(.badRequest, code: PostgRESTCode.putRange, message: "limit/offset querystring parameters are not allowed for PUT")
        }
        let key = plan.relation.primaryKey
        let keyFilters = root.filters.compactMap { filter -> (column: String, value: String)? in
            let condition = filter.condition
            guard filter.field.jsonPath.isEmpty, condition.op == .eq, !condition.negated, condition.quantifier == nil,
                case .text(let value) = condition.value
            else { return nil }
            return (filter.field.column, value)
        }
        guard !key.isEmpty, root.logic.isEmpty, keyFilters.count == root.filters.count, keyFilters.count == key.count,
            Set(keyFilters.map(\.column)) == Set(key)
        else {
            throw PostgRESTRefusal(
                .methodNotAllowed, code: PostgRESTCode.invalidFilters,
                message: "Filters must include all and only primary key columns with 'eq' operators")
        }
        return try self.insert(plan, body: body, resolution: .mergeDuplicates, target: key) { values, sql in
            keyFilters.map { filter in
                // A key column the body leaves out matches nothing: the answer is PGRST115, as in PostgREST.
                guard let value = values[filter.column] else { return "FALSE" }
                return "\(value) = \(sql.bind(filter.value))"
            }
        }
    }

    /// The check a `PUT` adds over its statement: other than one row written raises `PGRST115`, so the transaction
    /// rolls back.
    static let putCheck =
        "(SELECT CASE WHEN count(*) <> 1 THEN guestpass_server.refuse_table_result('\(PostgRESTCode.putKeyMismatch)', count(*)) END FROM pgrst_source)"
}
