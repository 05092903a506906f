public import GuestPassPostgres
import PostgRESTGrammar

/// The transaction-local settings a table or RPC request runs under, set by one statement before the request's own
/// (one Bind/Execute in the request's pipeline, whatever applies):
/// - `search_path`, as PostgREST sets it: the request's schema (the default one, or the one
///   `Accept-Profile`/`Content-Profile` chose) followed by the extra search path (`GUESTPASS_DB_EXTRA_SEARCH_PATH`,
///   PostgREST's `db-extra-search-path`, `public` by default). So a function of a second exposed schema that names its
///   tables unqualified finds them in its own schema, and operators and functions of extensions installed in an extra
///   schema (`ltree` in `public`, `isn` in `extensions`) resolve.
/// - With a table plan (a table request, or an RPC call shaped by the table grammar): the role's `statement_timeout`
///   (`set_config('role', …)` does not apply a role's settings as a login does), so every statement of the request,
///   `count=exact` included, runs under it; and `Prefer: timezone=…` (the zone timestamps are written in), which
///   PostgreSQL checks (an unknown zone is its 22023, a 400), as PostgREST sets it.
public enum RequestSettings {
    /// `SELECT set_config('search_path', $1, true)[, set_config('statement_timeout', $2, true)][, …]`: the names are
    /// fixed text and the values bound, so the statement has at most four texts and is prepared once per connection.
    public static func statement(schema: String, extraSearchPath: [String], plan: TablePlan?, role: String) -> PostgresStatement {
        var settings = [("search_path", ([schema] + extraSearchPath).map(TableSQL.quoted).joined(separator: ", "))]
        if let timeout = plan?.catalog.statementTimeouts[role] { settings.append(("statement_timeout", timeout)) }
        if let zone = plan?.preferences.timezone { settings.append(("timezone", zone)) }
        let calls = settings.indices.map { "set_config('\(settings[$0].0)', $\($0 + 1), true)" }
        return PostgresStatement("SELECT " + calls.joined(separator: ", "), settings.map(\.1), reusesPlan: true)
    }
}
