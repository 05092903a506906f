/// Which keys of base tables a view shows, as PostgREST's schema cache reads them (`allViewsKeyDependencies`): for a
/// view's primary key (`Location` after an insert into a view, an upsert's conflict target) and for the relationships
/// a view takes over from the foreign keys of its base tables (embedding `projects_view?select=clients(*)`).
///
/// Where a view column comes from is read from its `_RETURN` rule (`pg_rewrite.ev_action`, the stored query tree):
/// each top-level target entry records `:resorigtbl` and `:resorigcol`. The text is cut at each `:resno`; the entries
/// of the view's own target list are those at the least depth of `{` nesting (an entry of a subquery, in `FROM`,
/// `WHERE`, a CTE or the select list, sits deeper; escaped braces in names are not counted). A column taken from
/// another view is followed through that view's rule, up to 16 levels (PostgreSQL's own views are never read: no app
/// view's key comes from them). A key counts only when the view shows every one of its columns. Limit: a column that
/// is an expression (`label_color / 2`) shows no base column.
struct ViewKeyDependency: Sendable, Decodable {
    enum Kind: String, Sendable, Decodable {
        /// The view shows a primary key of the base table.
        case primaryKey = "p"
        /// The view shows the referencing columns of a foreign key of the base table.
        case foreignKey = "f"
        /// The view shows the columns a foreign key references in the base table.
        case referencedByForeignKey = "f_ref"
    }

    let viewSchema: String
    let view: String
    let kind: Kind
    /// The constraint's name.
    let constraint: String
    let tableSchema: String
    let table: String
    /// For each of the key's columns, in key order: the table's column and the view columns that show it (in the
    /// view's order; a column can be shown under several names).
    let columns: [Shown]

    struct Shown: Sendable, Decodable {
        let tableColumn: String
        let viewColumns: [String]

        init(from decoder: any Decoder) throws {
            var pair = try decoder.unkeyedContainer()
            self.tableColumn = try pair.decode(String.self)
            self.viewColumns = try pair.decode([String].self)
        }
    }

    enum CodingKeys: String, CodingKey {
        case view, kind, constraint, table, columns
        case viewSchema = "view_schema"
        case tableSchema = "table_schema"
    }

    /// Every way to read the key through the view: one base-column → view-column map per choice of view column for
    /// each key column (one map, unless the view shows a key column twice).
    var mappings: [[String: String]] {
        self.columns.reduce([[:]]) { partial, shown in
            partial.flatMap { mapping in
                shown.viewColumns.map { column in mapping.merging([shown.tableColumn: column]) { first, _ in first } }
            }
        }
    }

    /// A JSON array of the dependencies of the views of the exposed schemas (`$1`, comma-separated).
    static let query = """
        WITH RECURSIVE pieces AS (
          SELECT r.ev_class AS view_id, s.piece, s.position,
                 sum(length(b.bare) - length(replace(b.bare, '{', '')) - length(b.bare) + length(replace(b.bare, '}', '')))
                   OVER (PARTITION BY r.ev_class ORDER BY s.position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS depth
          FROM pg_catalog.pg_rewrite AS r
          JOIN pg_catalog.pg_class AS v ON v.oid = r.ev_class AND v.relkind IN ('v', 'm')
            AND v.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
          CROSS JOIN LATERAL regexp_split_to_table(r.ev_action::text, ' :resno ') WITH ORDINALITY AS s(piece, position)
          CROSS JOIN LATERAL (SELECT regexp_replace(s.piece, '\\\\.', '', 'g') AS bare) AS b
          WHERE r.rulename = '_RETURN'
        ), top_level AS (
          SELECT view_id, piece, depth, min(depth) OVER (PARTITION BY view_id) AS top_depth FROM pieces WHERE position > 1
        ), entries AS (
          SELECT t.view_id, m[1]::int AS view_column, m[2]::oid AS origin_table, m[3]::int AS origin_column
          FROM top_level AS t
          CROSS JOIN LATERAL regexp_match(t.piece,
            '^(\\d+) :resname (?:[^ \\\\]|\\\\.)* :ressortgroupref \\d+ :resorigtbl (\\d+) :resorigcol (\\d+)') AS m
          WHERE t.depth = t.top_depth
        ), origins AS (
          SELECT view_id, view_column, origin_table, origin_column, 1 AS depth FROM entries WHERE origin_table <> 0
          UNION ALL
          SELECT o.view_id, o.view_column, e.origin_table, e.origin_column, o.depth + 1
          FROM origins AS o JOIN entries AS e ON e.view_id = o.origin_table AND e.view_column = o.origin_column
          WHERE e.origin_table <> 0 AND o.depth < 16
        ), key_columns AS (
          SELECT k.contype::text AS kind, k.oid AS constraint_id, k.conrelid AS table_id, c.attnum, c.position, cardinality(k.conkey) AS size
          FROM pg_catalog.pg_constraint AS k
          CROSS JOIN LATERAL unnest(k.conkey) WITH ORDINALITY AS c(attnum, position)
          WHERE k.contype = 'p' OR (k.contype = 'f' AND k.conparentid = 0)
          UNION ALL
          SELECT 'f_ref', k.oid, k.confrelid, c.attnum, c.position, cardinality(k.confkey)
          FROM pg_catalog.pg_constraint AS k
          CROSS JOIN LATERAL unnest(k.confkey) WITH ORDINALITY AS c(attnum, position)
          WHERE k.contype = 'f' AND k.conparentid = 0
        ), shown AS (
          SELECT o.view_id, k.kind, k.constraint_id, k.table_id, k.attnum, k.position, k.size,
                 array_agg(va.attname::text ORDER BY o.view_column) AS view_columns
          FROM origins AS o
          JOIN key_columns AS k ON k.table_id = o.origin_table AND k.attnum = o.origin_column
          JOIN pg_catalog.pg_attribute AS va ON va.attrelid = o.view_id AND va.attnum = o.view_column
          GROUP BY o.view_id, k.kind, k.constraint_id, k.table_id, k.attnum, k.position, k.size
        ), whole_keys AS (
          SELECT s.view_id, s.kind, s.constraint_id, s.table_id,
                 json_agg(json_build_array(ta.attname, s.view_columns) ORDER BY s.position) AS columns
          FROM shown AS s
          JOIN pg_catalog.pg_attribute AS ta ON ta.attrelid = s.table_id AND ta.attnum = s.attnum
          GROUP BY s.view_id, s.kind, s.constraint_id, s.table_id, s.size
          HAVING count(*) = s.size
        )
        SELECT json_agg(json_build_object(
          'view_schema', vn.nspname, 'view', v.relname, 'kind', w.kind, 'constraint', k.conname,
          'table_schema', tn.nspname, 'table', t.relname, 'columns', w.columns)
          ORDER BY vn.nspname, v.relname, k.conname, w.kind)
        FROM whole_keys AS w
        JOIN pg_catalog.pg_class AS v ON v.oid = w.view_id
        JOIN pg_catalog.pg_namespace AS vn ON vn.oid = v.relnamespace
        JOIN pg_catalog.pg_constraint AS k ON k.oid = w.constraint_id
        JOIN pg_catalog.pg_class AS t ON t.oid = w.table_id
        JOIN pg_catalog.pg_namespace AS tn ON tn.oid = t.relnamespace
        WHERE vn.nspname = ANY (string_to_array($1, ','))
        """
}
