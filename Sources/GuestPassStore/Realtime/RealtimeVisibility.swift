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

/// One identity's question to `RealtimeVisibility`: which of `images` (JSON objects, as captured) its role and claims
/// may SELECT, and which of `filters` (each a list of ANDed conditions) each passes.
public struct RealtimeCheck: Sendable {
    public let identity: RequestIdentity
    public let images: [String]
    public let filters: [[RealtimeFilter.Condition]]

    public init(identity: RequestIdentity, images: [String], filters: [[RealtimeFilter.Condition]]) {
        self.identity = identity
        self.images = images
        self.filters = filters
    }
}

/// The SQL that decides which captured row images a subscriber sees, and which filters they pass: one statement per
/// (table, subscriber identity, poll), run as that identity inside a read-only transaction (its own, or one shared by a
/// batch of identities, each between a savepoint and the rollback to it), so `auth.uid()`,
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
    /// each condition list of `filters` (a list is ANDed; an empty list always passes). Its text depends only on the
    /// table, the role's policies and hidden columns and the filters' columns and operators (images and values are
    /// parameters), so a session pool prepares it once per connection (while there is room) and every identity, poll and
    /// batch of that shape reuses the plan (the policies' `(select auth.uid())` are init plans, evaluated again at each execution).
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
        // Its text varies with the table and the filters' shape, as a table request's does: prepared while there is room
        // (half the session's slots), never crowding out the fixed statements.
        var statement = PostgresStatement(sql, parameters)
        statement.reusesPlanWhileRoom = true
        return statement
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
        let request = RealtimeCheck(identity: identity, images: images, filters: filters)
        guard table.readable, !images.isEmpty else { return self.nothingVisible(request) }
        let results = try await pool.requestTransaction(
            identity, readOnly: true, [self.timeoutStatement, self.statement(table: table, images: images, filters: filters)])
        return try self.verdicts(results[1], request, table: table)
    }

    /// Runs the checks of several identities on one table (the role's: every identity's role must be `table`'s) in one
    /// read-only transaction and one round trip (`PostgresPool.requestTransactions`): each check still runs as its own
    /// identity, between a savepoint and the rollback to it, so each sees only its own role and claims. One statement
    /// timeout bounds the whole batch. A check that fails (a policy that raises, the timeout) fails the batch: the
    /// caller reruns its checks one by one with `check`, so that only the failing identity loses its changes.
    public static func check(pool: PostgresPool, table: RealtimeTable, batch: [RealtimeCheck]) async throws -> [RealtimeVerdicts] {
        var answers = batch.map(self.nothingVisible)
        guard table.readable else { return answers }
        let asked = batch.indices.filter { !batch[$0].images.isEmpty }
        guard !asked.isEmpty else { return answers }
        let results = try await pool.requestTransactions(
            asked.map { index in
                let request = batch[index]
                return (request.identity, [self.statement(table: table, images: request.images, filters: request.filters)])
            },
            readOnly: true, prelude: [self.timeoutStatement])
        for (position, index) in asked.enumerated() { answers[index] = try self.verdicts(results[position][0], batch[index], table: table) }
        return answers
    }

    /// Sets the short statement timeout of a check, for the rest of its transaction.
    static var timeoutStatement: PostgresStatement {
        PostgresStatement("SELECT set_config('statement_timeout', $1, true)", [self.statementTimeout], reusesPlan: true)
    }

    private static func nothingVisible(_ request: RealtimeCheck) -> RealtimeVerdicts {
        RealtimeVerdicts(
            visible: request.images.map { _ in false }, matches: request.images.map { _ in request.filters.map { _ in false } },
            trimmedImages: request.images.map { _ in nil })
    }

    /// Reads one check statement's rows back into verdicts.
    private static func verdicts(_ result: PostgresResult, _ request: RealtimeCheck, table: RealtimeTable) throws -> RealtimeVerdicts {
        let (images, filters) = (request.images, request.filters)
        var visible = images.map { _ in false }
        var matches = images.map { _ in filters.map { _ in false } }
        var trimmed: [String?] = images.map { _ in nil }
        let hidden = !table.hiddenColumns.isEmpty
        for row in result.rows {
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
