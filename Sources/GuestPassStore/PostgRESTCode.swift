/// PostgREST's error codes that `/rest/v1` answers (`Error.hs`), one name each: a route, the error mapping, the store's
/// statement builders (`PostgRESTRefusal`, the codes `guestpass_server.refuse_table_result` raises) and a test cannot
/// disagree on a spelling. Public: the store builds refusals with them, GuestPassApp answers them.
public enum PostgRESTCode {
    /// 503: the database cannot be reached.
    public static let databaseUnreachable = "PGRST000"
    /// 503: no pool connection became free in time.
    public static let poolTimeout = "PGRST003"
    /// 404: no function of the exposed schemas fits the name and arguments.
    public static let functionNotFound = "PGRST202"
    /// 401: the bearer token does not verify.
    public static let invalidToken = "PGRST301"
    /// 401: the bearer token verifies but its claims refuse it (expired).
    public static let invalidClaims = "PGRST303"
    /// 400: the query string does not parse.
    public static let queryParse = "PGRST100"
    /// 400: the body is not valid JSON, its objects' keys differ, or its media type is not JSON.
    public static let invalidBody = "PGRST102"
    /// 416: an impossible range (negative limit, offset beyond the total).
    public static let invalidRange = "PGRST103"
    /// 405: a `PUT` whose filters are not exactly its relation's primary-key columns, each with `eq`.
    public static let invalidFilters = "PGRST105"
    /// 406: `Accept-Profile` / `Content-Profile` names a schema that is not exposed.
    public static let unacceptableSchema = "PGRST106"
    /// 406: no acceptable media type in `Accept`.
    public static let unacceptableMediaType = "PGRST107"
    /// 400: a filter, order or limit names an embedding that `select` does not have.
    public static let notEmbedded = "PGRST108"
    /// 400: `limit` or `offset` on a `PUT`.
    public static let putRange = "PGRST114"
    /// 400: a `PUT` whose body does not hold the primary-key values its URL names (or holds several such rows).
    public static let putKeyMismatch = "PGRST115"
    /// 406: a singular response (`application/vnd.pgrst.object+json`) with other than one row.
    public static let notSingular = "PGRST116"
    /// 405: a method the table API does not serve.
    public static let unsupportedMethod = "PGRST117"
    /// 400: `order=rel(col)` on a to-many embedding.
    public static let relatedOrderNotToOne = "PGRST118"
    /// 400: an unknown preference under `handling=strict`.
    public static let invalidPreferences = "PGRST122"
    /// 500: an app's `RAISE SQLSTATE 'PGRST'` whose message or detail is not PostgREST's JSON.
    public static let raiseNotParsed = "PGRST121"
    /// 400: `select` uses an aggregate (`count()`, `col.sum()`), which PostgREST refuses unless enabled.
    public static let aggregatesNotAllowed = "PGRST123"
    /// 400: more rows affected than `max-affected` allows (`handling=strict`).
    public static let maxAffected = "PGRST124"
    /// 404: a path of more segments than `/<table>` or `/rpc/<function>`.
    public static let invalidPath = "PGRST125"
    /// 400: a feature the server does not implement.
    public static let notImplemented = "PGRST127"
    /// 400: no foreign key links the two relations of an embedding.
    public static let noRelationship = "PGRST200"
    /// 300: several foreign keys link them.
    public static let ambiguousRelationship = "PGRST201"
    /// 400: the body or `columns=` names a column the relation does not have.
    public static let columnNotFound = "PGRST204"
    /// 404: no such table or view in the exposed schemas.
    public static let tableNotFound = "PGRST205"
}
