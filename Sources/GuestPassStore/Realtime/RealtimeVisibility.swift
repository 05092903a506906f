public import GuestPassPostgres
public import RealtimeProtocol

extension RealtimeFilter.Operator {
    /// The comparison in SQL; the value is cast to the column's type inside PostgreSQL, so `id=eq.5` on an `int8`
    /// compares numbers and `at=gt.2026-01-01` compares times (`in` compares with `= any(…)`).
    var sql: String {
        switch self {
        case .eq, .in: "="
        case .neq: "<>"
        case .lt: "<"
        case .lte: "<="
        case .gt: ">"
        case .gte: ">="
        }
    }
}

/// What one subscriber identity may see of a batch of captured row images: for each image, whether the role and
/// claims can SELECT it, which of the given filters it passes, and its text with the columns the role may not
/// SELECT removed (nil when nothing had to be removed).
public struct RealtimeVerdicts: Sendable {
    public let visible: [Bool]
    /// `matches[image][filter]`.
    public let matches: [[Bool]]
    public let trimmedImages: [String?]
}

/// The SQL that decides which captured row images a subscriber sees, and which filters they pass: one statement per
/// (table, subscriber identity, poll), run inside a read-only request transaction as that identity, so `auth.uid()`,
/// `auth.device_id()` and `auth.app_id()` in the policies read the subscriber's verified claims.
///
/// Each image becomes a row of the table's own type (`jsonb_populate_record(null::table, image)`) under the table's
/// name, and the SELECT policies' USING expressions that apply to the role are evaluated on it, combined as PostgreSQL
/// combines them (permissive ones ORed, restrictive ones ANDed, none permissive: nothing visible). Filters are
/// evaluated in the same row with PostgreSQL's operators after casting each value to the column's type. Identifiers
/// come from the catalogs and are quoted; values travel as parameters. A policy that raises, or a statement that runs
/// past its short timeout, fails this identity's check only: the caller reports it to those subscribers.
public enum RealtimeVisibility {
    /// The statement timeout of one check: a policy slower than this costs its subscribers the change, nobody else.
    public static let statementTimeout = "2s"

    /// Builds the check of `images` (JSON objects, as captured) against `table`'s policies for its role and against
    /// each condition list of `filters` (a list is ANDed; an empty list always passes).
    public static func statement(table: RealtimeTable, images: [String], filters: [[RealtimeFilter.Condition]]) -> PostgresStatement {
        var parameters: [any PostgresEncodable] = ["[" + images.joined(separator: ",") + "]"]
        let alias = RPCStatement.quoted(table.name)
        var columns = ["\"gp$ord\"::int4", "COALESCE((\(self.policyExpression(table))), false)"]
        for conditions in filters {
            let terms = conditions.map { condition -> String in
                parameters.append(condition.op == .in ? PostgresTextArray.literal(condition.values) : condition.values.first ?? "")
                let sqlType = table.column(condition.column)?.sqlType ?? "text"
                let column = alias + "." + RPCStatement.quoted(condition.column)
                let comparison =
                    condition.op == .in
                    ? "\(column) = ANY ($\(parameters.count)::text[]::\(sqlType)[])"
                    : "\(column) \(condition.op.sql) $\(parameters.count)::\(sqlType)"
                return condition.negated ? "NOT (\(comparison))" : "(\(comparison))"
            }
            columns.append("COALESCE(\(terms.isEmpty ? "true" : terms.joined(separator: " AND ")), false)")
        }
        let hidden = table.hiddenColumns
        if !hidden.isEmpty {
            parameters.append(PostgresTextArray.literal(hidden))
            columns.append("(\"gp$image\" - $\(parameters.count)::text[])::text")
        }
        let sql = """
            SELECT \(columns.joined(separator: ", "))
            FROM (SELECT x."gp$ord", x."gp$image", p.*
                  FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x("gp$image", "gp$ord")
                  CROSS JOIN LATERAL jsonb_populate_record(NULL::\(RPCStatement.quoted(table.schema)).\(alias), x."gp$image") AS p) AS \(alias)
            ORDER BY 1
            """
        return PostgresStatement(sql, parameters)
    }

    /// The row-level security predicate for the table's role: true without RLS (or for a role that bypasses it).
    static func policyExpression(_ table: RealtimeTable) -> String {
        guard table.rowSecurity, !table.bypassesRowSecurity else { return "true" }
        let permissive = table.policies.filter(\.permissive).compactMap(\.qual)
        guard !permissive.isEmpty else { return "false" }
        let restrictive = table.policies.filter { !$0.permissive }.compactMap(\.qual)
        let anyPermissive = permissive.map { "(\($0))" }.joined(separator: " OR ")
        return ([anyPermissive] + restrictive.map { "(\($0))" }).map { "(\($0))" }.joined(separator: " AND ")
    }

    /// Runs the check as `identity` (read-only, with the short statement timeout).
    public static func check(
        pool: PostgresPool, identity: RequestIdentity, table: RealtimeTable, images: [String], filters: [[RealtimeFilter.Condition]]
    ) async throws -> RealtimeVerdicts {
        guard table.readable, !images.isEmpty else {
            return RealtimeVerdicts(
                visible: images.map { _ in false }, matches: images.map { _ in filters.map { _ in false } },
                trimmedImages: images.map { _ in nil })
        }
        let statement = self.statement(table: table, images: images, filters: filters)
        let results = try await pool.requestTransaction(
            identity, readOnly: true,
            [PostgresStatement("SELECT set_config('statement_timeout', $1, true)", [self.statementTimeout], reusesPlan: true), statement]
        )
        var visible = images.map { _ in false }
        var matches = images.map { _ in filters.map { _ in false } }
        var trimmed: [String?] = images.map { _ in nil }
        let hidden = !table.hiddenColumns.isEmpty
        for row in results[1].rows {
            let index = try row.decode(Int.self, at: 0) - 1
            guard images.indices.contains(index) else { continue }
            visible[index] = try row.decode(Bool.self, at: 1)
            for filter in filters.indices { matches[index][filter] = try row.decode(Bool.self, at: 2 + filter) }
            if hidden { trimmed[index] = try row.decode(String?.self, at: 2 + filters.count) }
        }
        return RealtimeVerdicts(visible: visible, matches: matches, trimmedImages: trimmed)
    }

    /// Checks that each condition's value(s) cast to its column's type, as the login role (no table is read).
    /// Returns nil when they do, else PostgreSQL's message (`invalid input syntax for type uuid: "x"`).
    public static func validateValues(pool: PostgresPool, table: RealtimeTable, conditions: [RealtimeFilter.Condition]) async throws -> String? {
        guard !conditions.isEmpty else { return nil }
        var parameters: [any PostgresEncodable] = []
        let casts = conditions.map { condition -> String in
            let sqlType = table.column(condition.column)?.sqlType ?? "text"
            if condition.op == .in {
                parameters.append(PostgresTextArray.literal(condition.values))
                return "$\(parameters.count)::text[]::\(sqlType)[] IS NULL"
            }
            parameters.append(condition.values.first ?? "")
            return "$\(parameters.count)::\(sqlType) IS NULL"
        }
        do {
            _ = try await pool.execute("SELECT " + casts.joined(separator: ", "), parameters)
            return nil
        } catch let error as PostgresError where error.sqlState?.errorClass == "22" {
            return error.message
        }
    }
}
