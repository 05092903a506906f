import Foundation
import GuestPassPostgres

/// A table or view of an exposed schema, as the schema cache describes it: what `/rest/v1/<name>` may name. Every
/// identifier here comes from `pg_catalog`, never from a request; the SQL builder quotes them all.
public struct Relation: Sendable {
    /// A column, as `pg_attribute` describes it.
    public struct Column: Sendable, Decodable {
        public let name: String
        /// `format_type` of the column's type, schema-qualified where it is not in `pg_catalog` (read with an empty
        /// `search_path`), so it can be spliced into `json_to_recordset(…) AS _("col" <type>)`.
        public let type: String
        /// For a domain, the type it is a domain over, through domains of domains (`format_type`); nil otherwise.
        public let baseType: String?
        public let nullable: Bool
        /// The default expression (`pg_get_expr`, qualified), spliced only for `Prefer: missing=default`.
        public let defaultExpression: String?
        /// `GENERATED ALWAYS AS (…) STORED` columns can never be written.
        public let generated: Bool
        /// PostgREST's data representations, for a type of the database's own (a domain): the function of a cast
        /// from `json` to it reads the column's value in a body, and the function of a cast from it to `json` writes
        /// it in an answer (qualified names from the catalog; called, since PostgreSQL ignores casts to and from a
        /// domain).
        public var representationParser: String? = nil
        public var representationFormatter: String? = nil
        /// The function of a cast from `text` to the column's domain: a filter's value is read through it
        /// (`label_color=eq.000100`), as PostgREST reads it.
        public var representationTextParser: String? = nil

        enum CodingKeys: String, CodingKey {
            case name, type, nullable, generated
            case baseType = "base_type"
            case defaultExpression = "default"
            case representationParser = "representation_parser"
            case representationFormatter = "representation_formatter"
            case representationTextParser = "representation_text_parser"
        }
    }

    /// `pg_class.relkind`.
    public enum Kind: String, Sendable {
        case table = "r"
        case partitionedTable = "p"
        case view = "v"
        case materializedView = "m"
        case foreignTable = "f"
    }

    public let schema: String
    public let name: String
    public let kind: Kind
    public let columns: [Column]
    /// The primary key's columns in key order; a view's are the columns that show every column of its base tables'
    /// primary keys (`ViewKeys`), in the view's order; empty for a relation without one.
    public let primaryKey: [String]
    /// Every unique key (primary key included), each as a set of column names: one-to-one detection, `on_conflict`.
    public let uniqueKeys: [Set<String>]
    /// Row-level security enabled (tables only).
    public let rowSecurity: Bool
    /// PostgREST's computed fields: a function of the exposed schemas taking this relation's row as its one argument
    /// and returning one value, by name → its schema. Selected, filtered and ordered on like a column (never by `*`).
    public let computedFields: [String: String]
    /// The type each computed field returns, domains read through to their base type.
    let computedFieldTypes: [String: String]
    private let columnIndex: [String: Int]

    init(
        schema: String, name: String, kind: Kind, columns: [Column], primaryKey: [String], uniqueKeys: [Set<String>], rowSecurity: Bool,
        computedFields: [String: String] = [:], computedFieldTypes: [String: String] = [:]
    ) {
        self.computedFields = computedFields
        self.computedFieldTypes = computedFieldTypes
        self.schema = schema
        self.name = name
        self.kind = kind
        self.columns = columns
        self.primaryKey = primaryKey
        self.uniqueKeys = uniqueKeys
        self.rowSecurity = rowSecurity
        self.columnIndex = Dictionary(columns.enumerated().map { ($0.element.name, $0.offset) }, uniquingKeysWith: { first, _ in first })
    }

    /// The column named `name`, or nil.
    public func column(_ name: String) -> Column? { self.columnIndex[name].map { self.columns[$0] } }

    /// The type of the column or computed field `name` with domains read through (`tsvector` for a domain over it),
    /// or nil for neither.
    func baseType(of name: String) -> String? {
        self.column(name).map { $0.baseType ?? $0.type } ?? self.computedFieldTypes[name]
    }

    public var qualifiedName: String { self.schema + "." + self.name }
}

/// A foreign key between two relations of the exposed schemas: the edge an embedding follows. A view that shows a base
/// table's key columns holds that key too, under the key's name and with the view's column names
/// (`RelationCatalog.viewForeignKeys`), as in PostgREST.
public struct ForeignKey: Sendable, Decodable {
    public let name: String
    public let schema: String
    public let table: String
    public let columns: [String]
    public let referencedSchema: String
    public let referencedTable: String
    public let referencedColumns: [String]
    /// The referencing columns are a unique key of the (base) table that holds them: one referencing row at most.
    public let oneToOne: Bool

    init(
        name: String, schema: String, table: String, columns: [String], referencedSchema: String, referencedTable: String,
        referencedColumns: [String], oneToOne: Bool
    ) {
        self.name = name
        self.schema = schema
        self.table = table
        self.columns = columns
        self.referencedSchema = referencedSchema
        self.referencedTable = referencedTable
        self.referencedColumns = referencedColumns
        self.oneToOne = oneToOne
    }

    /// The key references its own table (a tree: `p_web_id → id`).
    var isSelfReference: Bool { self.schema == self.referencedSchema && self.table == self.referencedTable }

    enum CodingKeys: String, CodingKey {
        case name, schema, table, columns
        case referencedSchema = "referenced_schema"
        case referencedTable = "referenced_table"
        case referencedColumns = "referenced_columns"
        case oneToOne = "one_to_one"
    }
}

/// A computed relationship: `schema.function(parent)` returns rows of `target` (one row for `RETURNS target` or
/// `RETURNS SETOF target ROWS 1`, else many), embedded under the function's name as a foreign key's target would be.
public struct ComputedRelationship: Sendable, Decodable {
    public let schema: String
    public let function: String
    public let parentSchema: String
    public let parent: String
    public let targetSchema: String
    public let target: String
    public let toOne: Bool

    enum CodingKeys: String, CodingKey {
        case schema, function, parent, target
        case parentSchema = "parent_schema"
        case targetSchema = "target_schema"
        case toOne = "to_one"
    }
}

/// The relations of the exposed schemas and the foreign keys between them, loaded in one query.
public struct RelationCatalog: Sendable {
    public internal(set) var relations: [String: Relation] = [:]
    public internal(set) var foreignKeys: [ForeignKey] = []
    /// PostgREST's computed relationships: functions of the exposed schemas from one relation's row to another's rows.
    public internal(set) var computedRelationships: [ComputedRelationship] = []
    /// The per-role `statement_timeout` (`ALTER ROLE … [IN DATABASE …] SET statement_timeout`, the database's own
    /// setting first), applied to each table request, since
    /// `set_config('role', …)` does not apply a role's settings the way a login does.
    public internal(set) var statementTimeouts: [String: String] = [:]

    /// The relation `schema.name`, or nil when the last load did not see it.
    public func relation(schema: String, name: String) -> Relation? { self.relations[schema + "." + name] }

    /// The tables of the exposed schemas that an API role may write (INSERT, UPDATE or DELETE) while row-level security
    /// is off: every row of them is open to every caller with that privilege.
    public internal(set) var writableWithoutRowSecurity: [String] = []

    /// A column's default as PostgREST's schema cache reads it, for `Prefer: missing=default`: none for a generated
    /// column (it is always computed), the column's own default, else the next value of a `GENERATED BY DEFAULT AS
    /// IDENTITY` column's sequence, else its domain's default (`CREATE DOMAIN … DEFAULT`).
    static let columnDefault = """
        CASE WHEN a.attgenerated <> '' THEN NULL
             WHEN d.adbin IS NOT NULL THEN pg_get_expr(d.adbin, d.adrelid)
             WHEN a.attidentity = 'd' THEN (
               SELECT format('nextval(%L::regclass)', s.objid::regclass::text) FROM pg_catalog.pg_depend AS s
               WHERE s.classid = 'pg_catalog.pg_class'::regclass AND s.refobjid = a.attrelid AND s.refobjsubid = a.attnum AND s.deptype = 'i')
             WHEN t.typbasetype <> 0 THEN pg_get_expr(t.typdefaultbin, 0) END
        """

    /// The name of the type `oid` (SQL) is, or of the type it is a domain over, through domains of domains.
    static func baseType(_ oid: String) -> String {
        """
        (WITH RECURSIVE chain(oid, base) AS (
           SELECT b.oid, b.typbasetype FROM pg_catalog.pg_type AS b WHERE b.oid = \(oid)
           UNION ALL
           SELECT d.oid, d.typbasetype FROM pg_catalog.pg_type AS d JOIN chain ON d.oid = chain.base)
         SELECT format_type(oid, NULL) FROM chain WHERE base = 0)
        """
    }

    /// The one catalog query (run with an empty `search_path`, so type names and defaults come out qualified).
    static let query = """
        SELECT json_build_object(
          'relations', coalesce((
            SELECT json_agg(json_build_object(
              'schema', n.nspname, 'name', c.relname, 'kind', c.relkind, 'rls', c.relrowsecurity,
              'columns', coalesce((
                SELECT json_agg(json_build_object(
                  'name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'nullable', NOT a.attnotnull,
                  'base_type', CASE WHEN t.typtype = 'd' THEN \(Self.baseType("t.typbasetype")) END,
                  'default', \(Self.columnDefault), 'generated', a.attgenerated <> '',
                  'representation_parser', (SELECT k.castfunc::regproc::text FROM pg_catalog.pg_cast AS k
                    WHERE a.atttypid >= 16384 AND k.castsource = 'pg_catalog.json'::regtype AND k.casttarget = a.atttypid AND k.castfunc <> 0),
                  'representation_formatter', (SELECT k.castfunc::regproc::text FROM pg_catalog.pg_cast AS k
                    WHERE a.atttypid >= 16384 AND k.castsource = a.atttypid AND k.casttarget = 'pg_catalog.json'::regtype AND k.castfunc <> 0),
                  'representation_text_parser', (SELECT k.castfunc::regproc::text FROM pg_catalog.pg_cast AS k
                    WHERE a.atttypid >= 16384 AND k.castsource = 'pg_catalog.text'::regtype AND k.casttarget = a.atttypid AND k.castfunc <> 0))
                  ORDER BY a.attnum)
                FROM pg_catalog.pg_attribute AS a
                JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid
                LEFT JOIN pg_catalog.pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '[]'),
              'primary_key', coalesce((
                SELECT json_agg(a.attname ORDER BY k.position)
                FROM pg_catalog.pg_constraint AS p
                CROSS JOIN LATERAL unnest(p.conkey) WITH ORDINALITY AS k(attnum, position)
                JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND a.attnum = k.attnum
                WHERE p.conrelid = c.oid AND p.contype = 'p'), '[]'),
              'unique_keys', coalesce((
                SELECT json_agg((SELECT json_agg(a.attname) FROM pg_catalog.pg_attribute AS a
                                 WHERE a.attrelid = c.oid AND a.attnum = ANY (i.indkey::int2[])))
                FROM pg_catalog.pg_index AS i
                WHERE i.indrelid = c.oid AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL), '[]'),
              'computed', coalesce((
                SELECT json_object_agg(f.proname, json_build_object('schema', fn.nspname, 'type', \(Self.baseType("f.prorettype")))
                  ORDER BY fn.nspname)
                FROM pg_catalog.pg_proc AS f
                JOIN pg_catalog.pg_namespace AS fn ON fn.oid = f.pronamespace
                WHERE fn.nspname = ANY (string_to_array($1, ',')) AND f.prokind = 'f' AND NOT f.proretset AND f.pronargs = 1
                  AND f.proargtypes[0] = c.reltype AND f.prorettype <> 'pg_catalog.void'::pg_catalog.regtype), '{}')
            ) ORDER BY n.nspname, c.relname)
            FROM pg_catalog.pg_class AS c
            JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
            WHERE n.nspname = ANY (string_to_array($1, ',')) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
              AND NOT c.relispartition), '[]'),
          'foreign_keys', coalesce((
            SELECT json_agg(json_build_object(
              'name', f.conname, 'schema', n.nspname, 'table', c.relname,
              'columns', (SELECT json_agg(a.attname ORDER BY k.position) FROM unnest(f.conkey) WITH ORDINALITY AS k(attnum, position)
                          JOIN pg_catalog.pg_attribute AS a ON a.attrelid = f.conrelid AND a.attnum = k.attnum),
              'referenced_schema', rn.nspname, 'referenced_table', r.relname,
              'referenced_columns', (SELECT json_agg(a.attname ORDER BY k.position) FROM unnest(f.confkey) WITH ORDINALITY AS k(attnum, position)
                                     JOIN pg_catalog.pg_attribute AS a ON a.attrelid = f.confrelid AND a.attnum = k.attnum),
              'one_to_one', EXISTS (
                SELECT 1 FROM pg_catalog.pg_index AS i
                WHERE i.indrelid = f.conrelid AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
                  AND (SELECT array_agg(x ORDER BY x) FROM unnest(i.indkey::int2[]) AS x) = (SELECT array_agg(x ORDER BY x) FROM unnest(f.conkey) AS x)))
              ORDER BY f.conname, n.nspname, c.relname)
            FROM pg_catalog.pg_constraint AS f
            JOIN pg_catalog.pg_class AS c ON c.oid = f.conrelid
            JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
            JOIN pg_catalog.pg_class AS r ON r.oid = f.confrelid
            JOIN pg_catalog.pg_namespace AS rn ON rn.oid = r.relnamespace
            -- Every schema's keys: a view of an exposed schema takes over the keys of its base tables, wherever they are
            -- (the catalog keeps only those whose ends are both relations it serves).
            WHERE f.contype = 'f' AND n.nspname NOT IN ('pg_catalog', 'information_schema')), '[]'),
          'computed_relationships', coalesce((
            SELECT json_agg(json_build_object(
              'schema', fn.nspname, 'function', f.proname, 'parent_schema', pn.nspname, 'parent', pc.relname,
              'target_schema', tn.nspname, 'target', tc.relname, 'to_one', NOT f.proretset OR f.prorows = 1)
              ORDER BY fn.nspname, f.proname)
            FROM pg_catalog.pg_proc AS f
            JOIN pg_catalog.pg_namespace AS fn ON fn.oid = f.pronamespace
            JOIN pg_catalog.pg_class AS pc ON pc.reltype = f.proargtypes[0]
            JOIN pg_catalog.pg_namespace AS pn ON pn.oid = pc.relnamespace
            JOIN pg_catalog.pg_class AS tc ON tc.reltype = f.prorettype
            JOIN pg_catalog.pg_namespace AS tn ON tn.oid = tc.relnamespace
            WHERE fn.nspname = ANY (string_to_array($1, ',')) AND f.prokind = 'f' AND f.pronargs = 1
              AND pn.nspname = ANY (string_to_array($1, ',')) AND tn.nspname = ANY (string_to_array($1, ','))
              AND pc.relkind IN ('r', 'p', 'v', 'm', 'f') AND tc.relkind IN ('r', 'p', 'v', 'm', 'f')), '[]'),
          'statement_timeouts', coalesce((
            SELECT json_object_agg(t.rolname, t.value) FROM (
              SELECT DISTINCT ON (r.rolname) r.rolname, substr(setting, length('statement_timeout=') + 1) AS value
              FROM pg_catalog.pg_db_role_setting AS s
              JOIN pg_catalog.pg_roles AS r ON r.oid = s.setrole
              CROSS JOIN LATERAL unnest(s.setconfig) AS setting
              WHERE s.setdatabase IN (0, (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()))
                AND r.rolname IN ('anon', 'authenticated', 'service_role') AND setting LIKE 'statement_timeout=%'
              ORDER BY r.rolname, s.setdatabase DESC) AS t), '{}'),
          'view_keys', coalesce((\(ViewKeyDependency.query)), '[]'),
          'writable_without_rls', coalesce((
            SELECT json_agg(DISTINCT n.nspname || '.' || c.relname)
            FROM pg_catalog.pg_class AS c
            JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
            CROSS JOIN (VALUES ('anon'), ('authenticated'), ('service_role')) AS role(name)
            WHERE n.nspname = ANY (string_to_array($1, ',')) AND c.relkind IN ('r', 'p') AND NOT c.relrowsecurity
              AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = role.name)
              AND (has_table_privilege(role.name, c.oid, 'INSERT') OR has_table_privilege(role.name, c.oid, 'UPDATE')
                   OR has_table_privilege(role.name, c.oid, 'DELETE')
                   OR has_any_column_privilege(role.name, c.oid, 'INSERT') OR has_any_column_privilege(role.name, c.oid, 'UPDATE'))), '[]')
        )::text
        """

    private struct Document: Decodable {
        struct RelationRow: Decodable {
            let schema: String
            let name: String
            let kind: String
            let rls: Bool
            let columns: [Relation.Column]
            let primary_key: [String]
            let unique_keys: [[String]?]
            let computed: [String: ComputedField]
        }

        /// A computed field's schema and the type it returns (domains read through).
        struct ComputedField: Decodable {
            let schema: String
            let type: String?
        }

        let relations: [RelationRow]
        let foreign_keys: [ForeignKey]
        let computed_relationships: [ComputedRelationship]
        let statement_timeouts: [String: String]
        let writable_without_rls: [String]
        let view_keys: [ViewKeyDependency]
    }

    /// Decodes the document `query` returns.
    init(json: String) throws {
        let document = try JSONDecoder().decode(Document.self, from: Data(json.utf8))
        let viewKeys = Self.viewPrimaryKeys(document.view_keys, relations: document.relations)
        for row in document.relations {
            let relation = Relation(
                schema: row.schema, name: row.name, kind: Relation.Kind(rawValue: row.kind) ?? .table, columns: row.columns,
                primaryKey: row.primary_key.isEmpty ? viewKeys[row.schema + "." + row.name] ?? [] : row.primary_key,
                uniqueKeys: row.unique_keys.compactMap { $0.map(Set.init) }, rowSecurity: row.rls,
                computedFields: row.computed.mapValues(\.schema), computedFieldTypes: row.computed.compactMapValues(\.type)
            )
            self.relations[relation.qualifiedName] = relation
        }
        self.foreignKeys = (document.foreign_keys + Self.viewForeignKeys(document.view_keys, baseKeys: document.foreign_keys)).filter {
            self.relation(schema: $0.schema, name: $0.table) != nil && self.relation(schema: $0.referencedSchema, name: $0.referencedTable) != nil
        }
        self.computedRelationships = document.computed_relationships
        self.statementTimeouts = document.statement_timeouts
        self.writableWithoutRowSecurity = document.writable_without_rls
    }

    /// A view's primary key, as PostgREST infers it: for each base table whose whole primary key the view shows, the
    /// first view column showing each key column; in the view's column order.
    private static func viewPrimaryKeys(_ dependencies: [ViewKeyDependency], relations: [Document.RelationRow]) -> [String: [String]] {
        var shown: [String: Set<String>] = [:]
        for dependency in dependencies where dependency.kind == .primaryKey {
            shown[dependency.viewSchema + "." + dependency.view, default: []].formUnion(dependency.columns.compactMap(\.viewColumns.first))
        }
        var keys: [String: [String]] = [:]
        for row in relations {
            guard let columns = shown[row.schema + "." + row.name] else { continue }
            keys[row.schema + "." + row.name] = row.columns.map(\.name).filter(columns.contains)
        }
        return keys
    }

    /// The foreign keys views take over from their base tables (PostgREST's `addViewM2OAndO2ORels`): for a key from
    /// table A to table B, a view showing the key's columns of A holds it to B, B's referenced columns shown by a view
    /// make it a key from A to that view, and both together a key between the two views; one key per way of reading
    /// it through each view (a view showing a key column twice holds it twice).
    static func viewForeignKeys(_ dependencies: [ViewKeyDependency], baseKeys: [ForeignKey]) -> [ForeignKey] {
        var byKey: [String: [ViewKeyDependency]] = [:]
        for dependency in dependencies where dependency.kind != .primaryKey {
            byKey["\(dependency.tableSchema).\(dependency.table)|\(dependency.constraint)|\(dependency.kind.rawValue)", default: []].append(
                dependency)
        }
        typealias End = (schema: String, table: String, columns: [String])
        var found: [ForeignKey] = []
        for key in baseKeys {
            let referencing = (byKey["\(key.schema).\(key.table)|\(key.name)|f"] ?? []).flatMap { view in
                view.mappings.map { mapping in End(view.viewSchema, view.view, key.columns.map { mapping[$0] ?? $0 }) }
            }
            let referenced = (byKey["\(key.referencedSchema).\(key.referencedTable)|\(key.name)|f_ref"] ?? []).flatMap { view in
                view.mappings.map { mapping in End(view.viewSchema, view.view, key.referencedColumns.map { mapping[$0] ?? $0 }) }
            }
            let make = { (from: End, to: End) in
                ForeignKey(
                    name: key.name, schema: from.schema, table: from.table, columns: from.columns, referencedSchema: to.schema,
                    referencedTable: to.table, referencedColumns: to.columns, oneToOne: key.oneToOne)
            }
            let base = (
                referencing: End(key.schema, key.table, key.columns),
                referenced: End(key.referencedSchema, key.referencedTable, key.referencedColumns)
            )
            found += referencing.map { make($0, base.referenced) }
            found += referenced.map { make(base.referencing, $0) }
            found += referencing.flatMap { from in referenced.map { make(from, $0) } }
        }
        return found
    }

    init() {}
}
