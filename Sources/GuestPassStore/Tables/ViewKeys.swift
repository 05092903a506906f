/// The primary keys of views, as PostgREST's schema cache infers them (`Location` after an insert into a view, an
/// upsert's conflict target): a view's key is every view column that shows a column of a base table's primary key,
/// for each base table whose whole key the view shows (`with_multiple_pks`, a view over two keyed tables, has both
/// keys), in the view's column order.
///
/// Where a view column comes from is read from its `_RETURN` rule (`pg_rewrite.ev_action`, the stored query tree):
/// each top-level target entry records `:resorigtbl` and `:resorigcol`. The top-level target list follows the range
/// table and join tree in the tree's text, so for each column number the view's own entry is the last of that number
/// (an entry of a subquery in `FROM` or `WHERE` comes earlier) among those named as the view's column (an entry of a
/// subquery in the select list comes later, under its own name). A column taken from another view is followed
/// through that view's rule, up to 16 levels (PostgreSQL's own views are never read: no app view's key comes from
/// them). Limits: a column that is an expression (`label_color / 2`) shows no
/// base column; a view whose key columns appear only inside a `HAVING` subquery could be misread (such a view is not
/// updatable, so nothing is inserted into it).
enum ViewKeys {
    /// A JSON object, `"schema.view"` → its key columns, for the views of the exposed schemas (`$1`, comma-separated).
    static let query = """
        WITH RECURSIVE entries AS (
          SELECT DISTINCT ON (r.ev_class, m[1]::int) r.ev_class AS view_id, m[1]::int AS view_column, m[3]::oid AS origin_table,
                 m[4]::int AS origin_column
          FROM pg_catalog.pg_rewrite AS r
          JOIN pg_catalog.pg_class AS v ON v.oid = r.ev_class AND v.relkind IN ('v', 'm')
            AND v.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
          CROSS JOIN LATERAL regexp_matches(r.ev_action::text,
            ':resno (\\d+) :resname ((?:[^ \\\\]|\\\\.)*) :ressortgroupref \\d+ :resorigtbl (\\d+) :resorigcol (\\d+)', 'g')
            WITH ORDINALITY AS x(m, position)
          LEFT JOIN pg_catalog.pg_attribute AS a ON a.attrelid = r.ev_class AND a.attnum = m[1]::int
          WHERE r.rulename = '_RETURN'
          ORDER BY r.ev_class, m[1]::int, regexp_replace(m[2], '\\\\(.)', '\\1', 'g') = a.attname::text DESC, x.position DESC
        ), origins AS (
          SELECT view_id, view_column, origin_table, origin_column, 1 AS depth FROM entries WHERE origin_table <> 0
          UNION ALL
          SELECT o.view_id, o.view_column, e.origin_table, e.origin_column, o.depth + 1
          FROM origins AS o JOIN entries AS e ON e.view_id = o.origin_table AND e.view_column = o.origin_column
          WHERE e.origin_table <> 0 AND o.depth < 16
        ), key_columns AS (
          SELECT o.view_id, p.oid AS key_id, cardinality(p.conkey) AS key_size, k.attnum, min(o.view_column) AS view_column
          FROM origins AS o
          JOIN pg_catalog.pg_constraint AS p ON p.conrelid = o.origin_table AND p.contype = 'p'
          CROSS JOIN LATERAL unnest(p.conkey) AS k(attnum)
          WHERE k.attnum = o.origin_column
          GROUP BY o.view_id, p.oid, p.conkey, k.attnum
        ), whole_keys AS (
          SELECT view_id, view_column FROM (
            SELECT view_id, view_column, key_size, count(*) OVER (PARTITION BY view_id, key_id) AS shown FROM key_columns) AS c
          WHERE shown = key_size
        )
        SELECT json_object_agg(n.nspname || '.' || v.relname, keys.columns)
        FROM (SELECT w.view_id, json_agg(a.attname ORDER BY w.view_column) AS columns
              FROM (SELECT DISTINCT view_id, view_column FROM whole_keys) AS w
              JOIN pg_catalog.pg_attribute AS a ON a.attrelid = w.view_id AND a.attnum = w.view_column
              GROUP BY w.view_id) AS keys
        JOIN pg_catalog.pg_class AS v ON v.oid = keys.view_id
        JOIN pg_catalog.pg_namespace AS n ON n.oid = v.relnamespace
        WHERE n.nspname = ANY (string_to_array($1, ','))
        """
}
