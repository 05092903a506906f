import PostgRESTGrammar

/// The parts of a write's statement around the body and the returned rows, shared by `insert` and `update`.
extension TableStatements {
    /// The body's rows as `_b`, one for each element of the JSON array `payload` (a bound parameter), in the body's
    /// order: `from` is the FROM item, `values` each column's value (typed as the schema cache says), `order` keeps
    /// the body's order where the FROM item alone does not. Keys of an element that are not columns are never read; a
    /// column with a data representation (`Relation.Column.representationParser`) is read from its JSON value.
    /// With `Prefer: missing=default` a column whose key an element lacks takes the column's default (the schema
    /// cache's catalog text, never a client's; NULL where there is none), as PostgREST's `jsonb_build_object(defaults)
    /// || element` gives it; without it, NULL.
    static func bodyRows(
        _ body: TableBody, plan: TablePlan, payload: String, sql: inout TableSQL
    ) -> (values: [String], from: String, order: String) {
        // A column read through its data representation is taken from the element as JSON and cast.
        let record = body.columns.map { TableSQL.quoted($0.name) + " " + ($0.representationParser == nil ? $0.type : "json") }.joined(separator: ", ")
        let read = body.columns.map { column in
            let value = "_b." + TableSQL.quoted(column.name)
            return column.representationParser.map { "\($0)(\(value))" } ?? value
        }
        guard plan.preferences.missing == .default else { return (read, "json_to_recordset(\(payload)::json) AS _b(\(record))", "") }
        let values = zip(body.columns, read).map { column, value in
            "CASE WHEN _e.j ? \(sql.bind(column.name)) THEN \(value) ELSE \(column.defaultExpression ?? "NULL") END"
        }
        let from = "jsonb_array_elements(\(payload)::jsonb) WITH ORDINALITY AS _e(j, i) CROSS JOIN LATERAL jsonb_to_record(_e.j) AS _b(\(record))"
        return (values, from, " ORDER BY _e.i")
    }

    /// What a write's `RETURNING` gives back: `1` when no row is wanted, the primary key for `return=headers-only`'s
    /// `Location`, and for a representation the columns it reads (`TablePlan.returnedColumns`), else the whole row.
    /// PostgreSQL checks SELECT on what RETURNING names, so a role may write a table whose other columns it cannot read.
    static func returnedColumns(_ plan: TablePlan, table: String) throws -> String {
        if plan.returnsRepresentation {
            guard let names = try plan.returnedColumns() else { return table + ".*" }
            return names.map { table + "." + TableSQL.quoted($0) }.joined(separator: ", ")
        }
        if plan.returnsHeadersOnly, !plan.relation.primaryKey.isEmpty {
            return plan.relation.primaryKey.map { table + "." + TableSQL.quoted($0) }.joined(separator: ", ")
        }
        return "1"
    }
}
