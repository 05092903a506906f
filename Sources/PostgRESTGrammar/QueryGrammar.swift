/// PostgREST's query-string grammar for table requests. STUB: the parser is being written; the signatures are final.
public enum QueryGrammar {
    /// The keys that are never filters: `select`, `order`, `limit`, `offset`, `columns`, `on_conflict`, `apikey`, and
    /// the logic keys `or`, `and`, `not.or`, `not.and` (and their `<embedding>.`-prefixed forms).
    ///
    /// Splits a raw query string (the part after `?`, still percent-encoded) into decoded pairs, in order: `&`
    /// separates pairs, the first `=` key from value, `+` is a space, `%XX` is decoded. Invalid UTF-8 after decoding,
    /// a NUL, or a malformed `%` escape is a `QueryGrammarError` (400 PGRST100).
    public static func pairs(rawQuery: String) throws(QueryGrammarError) -> [(key: String, value: String)] {
        throw QueryGrammarError(message: "not implemented")
    }

    /// Parses the decoded pairs into a `TableQuery`. `apikey` is skipped. Repeated filter keys are all kept (ANDed);
    /// a repeated `select`/`order`/`limit`/`offset`/`columns`/`on_conflict` keeps the last. A negative `offset` is
    /// ignored; a negative `limit` is a `PGRST103` error (416).
    public static func parse(_ pairs: [(key: String, value: String)]) throws(QueryGrammarError) -> TableQuery {
        throw QueryGrammarError(message: "not implemented")
    }

    /// The `Range` request header (`0-19`, `5-`; optional `items=` unit prefix is not PostgREST's, refuse it): the
    /// offset and the limit (nil for an open end). Nil when the header does not parse (PostgREST then ignores it).
    public static func range(header: String) -> (offset: Int, limit: Int?)? {
        nil
    }
}

extension Preferences {
    /// Parses every `Prefer` header value of a request (see `Preferences`).
    public static func parse(headers: [String]) -> Preferences {
        Preferences()
    }
}
