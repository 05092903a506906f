import Foundation
public import GuestPassPostgres
import NIOConcurrencyHelpers

/// What Realtime needs to know about one table for one request role: whether it is in the `supabase_realtime`
/// publication, its columns with their types, its primary key, and the role's view of it (the columns it may
/// SELECT, and the USING expressions of the SELECT policies that apply to it).
///
/// Realtime decides visibility the way PostgreSQL's row-level security does, but on the captured row image rather
/// than on the row as it is now: `RealtimeVisibility` evaluates the same policy expressions (as `pg_get_expr` prints
/// them) against `jsonb_populate_record(null::table, image)`, under the subscriber's role and claims. That is what
/// makes DELETE events checkable at all (the row is gone), and it means an UPDATE that later moves a row to someone
/// else never shows them the earlier versions.
public struct RealtimeTable: Sendable {
    /// One column, in attribute order.
    public struct Column: Sendable, Decodable {
        public let name: String
        /// `pg_type.typname` (`int8`, `uuid`, `_text`): what the `columns` list of a change event carries.
        public let type: String
        /// `format_type(…)`: the SQL spelling used to cast a filter value to this column's type.
        public let sqlType: String
        /// Whether the role may SELECT this column (column or table privilege).
        public let selectable: Bool
    }

    /// One SELECT (or ALL) policy that applies to the role.
    public struct Policy: Sendable, Decodable {
        public let permissive: Bool
        /// The USING expression as SQL text, or nil (a permissive policy without one grants nothing).
        public let qual: String?
    }

    public let schema: String
    public let name: String
    /// Whether the table is in the `supabase_realtime` publication (only those are captured).
    public let published: Bool
    public let columns: [Column]
    public let primaryKey: [String]
    /// Whether row-level security is enabled on the table.
    public let rowSecurity: Bool
    /// Whether the role bypasses row-level security (none of the API roles does).
    public let bypassesRowSecurity: Bool
    public let policies: [Policy]

    /// Whether the role may read the table at all (at least one selectable column).
    public var readable: Bool { self.columns.contains { $0.selectable } }

    /// The columns the role may not SELECT, cut from every record it is sent.
    public var hiddenColumns: [String] { self.columns.filter { !$0.selectable }.map(\.name) }

    /// The column named `name`, if the table has it.
    public func column(_ name: String) -> Column? { self.columns.first { $0.name == name } }
}

/// A cache of `RealtimeTable` per (schema, table, role), read from the catalogs on first use and again after
/// `timeToLive` (Realtime re-reads its publication every minute too), so a table added to the publication, a new
/// policy or a changed grant takes effect within that time without a restart.
public final class RealtimeTables: Sendable {
    private struct Entry {
        let table: RealtimeTable?
        let loadedAt: ContinuousClock.Instant
    }

    private let pool: PostgresPool
    private let timeToLive: Duration
    private let entries = NIOLockedValueBox<[String: Entry]>([:])

    /// - Parameters:
    ///   - pool: the primary (the publication and policies are read where the changes are captured).
    ///   - timeToLive: how long a table's facts are trusted before they are read again.
    public init(pool: PostgresPool, timeToLive: Duration = .seconds(60)) {
        self.pool = pool
        self.timeToLive = timeToLive
    }

    /// The table's facts for `role`, or nil when no such table (or view) exists.
    public func table(schema: String, name: String, role: DatabaseRole) async throws -> RealtimeTable? {
        let key = schema + "\u{0}" + name + "\u{0}" + role.rawValue
        let now = ContinuousClock.now
        if let entry = self.entries.withLockedValue({ $0[key] }), entry.loadedAt.duration(to: now) < self.timeToLive {
            return entry.table
        }
        let table = try await self.load(schema: schema, name: name, role: role)
        self.entries.withLockedValue { $0[key] = Entry(table: table, loadedAt: now) }
        return table
    }

    private func load(schema: String, name: String, role: DatabaseRole) async throws -> RealtimeTable? {
        let result = try await self.pool.execute(Self.query, [schema, name, role.rawValue])
        guard let text = try result.first?.decode(String?.self, at: 0) else { return nil }
        let document = try JSONDecoder().decode(Document.self, from: Data(text.utf8))
        return RealtimeTable(
            schema: schema, name: name, published: document.published, columns: document.columns,
            primaryKey: document.primary_key ?? [], rowSecurity: document.rls, bypassesRowSecurity: document.bypass,
            policies: document.policies ?? []
        )
    }

    private struct Document: Decodable {
        let published: Bool
        let rls: Bool
        let bypass: Bool
        let columns: [RealtimeTable.Column]
        let primary_key: [String]?
        let policies: [RealtimeTable.Policy]?
    }

    /// One row, one JSON document: the table's publication membership, columns (with the role's SELECT privilege),
    /// primary key and the SELECT/ALL policies whose roles include `$3` (PostgreSQL applies a policy when the role has
    /// the privileges of one of its roles, or when it is for PUBLIC: `pg_has_role(…, 'USAGE')`).
    static let query = """
        SELECT json_build_object(
            'published', EXISTS (SELECT 1 FROM pg_catalog.pg_publication_tables AS p
                                 WHERE p.pubname = 'supabase_realtime' AND p.schemaname = n.nspname AND p.tablename = c.relname),
            'rls', c.relrowsecurity,
            'bypass', (SELECT r.rolbypassrls FROM pg_catalog.pg_roles AS r WHERE r.rolname = $3),
            'columns', (SELECT json_agg(json_build_object(
                                'name', a.attname, 'type', t.typname, 'sqlType', pg_catalog.format_type(a.atttypid, a.atttypmod),
                                'selectable', pg_catalog.has_column_privilege($3, c.oid, a.attnum, 'SELECT')) ORDER BY a.attnum)
                        FROM pg_catalog.pg_attribute AS a JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid
                        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
            'primary_key', (SELECT json_agg(a.attname ORDER BY k.position)
                            FROM pg_catalog.pg_index AS i
                            CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, position)
                            JOIN pg_catalog.pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                            WHERE i.indrelid = c.oid AND i.indisprimary),
            'policies', (SELECT json_agg(json_build_object(
                                 'permissive', p.polpermissive, 'qual', pg_catalog.pg_get_expr(p.polqual, p.polrelid)))
                         FROM pg_catalog.pg_policy AS p
                         WHERE p.polrelid = c.oid AND p.polcmd IN ('r', '*')
                           AND ('{0}'::oid[] && p.polroles::oid[]
                                OR EXISTS (SELECT 1 FROM unnest(p.polroles) AS pr(oid)
                                           WHERE pr.oid <> 0 AND pg_catalog.pg_has_role($3, pr.oid, 'USAGE'))))
        )::text
        FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')
        """
}
