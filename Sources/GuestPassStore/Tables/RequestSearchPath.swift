public import GuestPassPostgres

/// The `search_path` a table or RPC request runs under, as PostgREST sets it: the request's schema (the default one, or
/// the one `Accept-Profile`/`Content-Profile` chose) followed by the extra search path (`GUESTPASS_DB_EXTRA_SEARCH_PATH`,
/// PostgREST's `db-extra-search-path`, `public` by default). So a function of a second exposed schema that names its
/// tables unqualified finds them in its own schema, and operators and functions of extensions installed in an extra
/// schema (`ltree` in `public`, `isn` in `extensions`) resolve. Transaction-local, like every request setting.
public enum RequestSearchPath {
    /// `SELECT set_config('search_path', $1, true)`, the names quoted (a schema may hold any character but NUL).
    public static func statement(schema: String, extra: [String]) -> PostgresStatement {
        let path = ([schema] + extra).map(TableSQL.quoted).joined(separator: ", ")
        return PostgresStatement("SELECT set_config('search_path', $1, true)", [path], reusesPlan: true)
    }
}
