import Foundation
public import GuestPassPostgres
import Logging
import NIOConcurrencyHelpers

/// A function callable through `/rest/v1/rpc/<name>`, as the catalog describes it.
public struct RPCFunction: Sendable {
    /// An input argument (`IN`, `INOUT`, `VARIADIC`), in declaration order; an unnamed one has the empty name.
    public struct Argument: Sendable {
        public let name: String
        /// `format_type` of the argument's type, from the catalog (never from a request).
        public let typeName: String
        public let hasDefault: Bool
    }

    /// How the result is answered (PostgREST's shapes).
    public enum Shape: Sendable {
        case scalar, row, setOfRows, setOfScalars, void
    }

    public let schema: String
    public let name: String
    public let arguments: [Argument]
    public let shape: Shape
    /// STABLE or IMMUTABLE: runs in a read-only transaction.
    public let isReadOnly: Bool
    /// The columns of a row result (OUT or TABLE parameters, or the attributes of its composite type); empty for a
    /// `record` without them.
    let resultColumns: [Relation.Column]
    /// The table or view whose row type the function returns (`SETOF public.readings`), which its results embed from.
    let returnedTable: (schema: String, name: String)?

    init(
        schema: String, name: String, arguments: [Argument], shape: Shape, isReadOnly: Bool, resultColumns: [Relation.Column] = [],
        returnedTable: (schema: String, name: String)? = nil
    ) {
        self.schema = schema
        self.name = name
        self.arguments = arguments
        self.shape = shape
        self.isReadOnly = isReadOnly
        self.resultColumns = resultColumns
        self.returnedTable = returnedTable
    }

    /// The rows a function answers, as a relation the table grammar can select from, filter and order: the table or
    /// view whose row type it returns (so its foreign keys embed), else its result columns under its own name. Nil
    /// when it answers no rows of known columns.
    public func resultRelation(in catalog: RelationCatalog) -> Relation? {
        guard self.shape == .row || self.shape == .setOfRows else { return nil }
        if let table = self.returnedTable, let relation = catalog.relation(schema: table.schema, name: table.name) { return relation }
        guard !self.resultColumns.isEmpty else { return nil }
        return Relation(
            schema: self.schema, name: self.name, kind: .view, columns: self.resultColumns, primaryKey: [], uniqueKeys: [], rowSecurity: false)
    }

    /// The single unnamed json/jsonb argument, which receives the whole body (PostgREST's single-object form).
    public var takesWholeBody: Bool {
        self.arguments.count == 1 && self.arguments[0].name.isEmpty && ["json", "jsonb"].contains(self.arguments[0].typeName)
    }
}

/// The schema cache: the functions (`pg_proc`) and the relations, columns, keys and foreign keys (`RelationCatalog`) of
/// the exposed schemas, read in one transaction and reloaded together. The cache is reloaded after `timeToLive`,
/// and at once (at most once per `retryInterval`, a second by default) when a request names a function, signature or
/// table it does not know, so new and changed objects are picked up after a migration without a restart; SIGHUP and
/// `NOTIFY pgrst, 'reload schema'` (PostgREST's channel; `guestpass migrate up` sends it) reload it through the
/// `SchemaReloadListener` service. Loads are single-flight: requests that need one while it runs wait for it, so a
/// burst of requests naming unknown functions costs one catalog query and one pool connection. An explicit `reload`
/// (NOTIFY, SIGHUP) is only answered by a load that started after it was asked for, since a load already running may
/// have read the catalog before the change the reload announces; every reload asked for during one load shares the one
/// load that follows it.
public final class SchemaCache: Sendable {
    private struct State {
        var functions: [String: [RPCFunction]] = [:]
        var relations = RelationCatalog()
        var loadedAt: ContinuousClock.Instant?
        /// The running load, and how many explicit reloads it covers (those asked for before it started).
        var reloading: (task: Task<Void, any Error>, covers: Int)?
        /// Explicit reloads asked for so far, and how many of them the last finished load covers (it started after them).
        var reloadsAsked = 0
        var reloadsCovered = 0
        /// Catalog queries run so far (tests).
        var loads = 0
    }

    private let pool: PostgresPool
    /// The exposed schemas (`GUESTPASS_DB_SCHEMAS`), the first the default.
    public let schemas: [String]
    /// The schemas after the request's own in its `search_path` (`GUESTPASS_DB_EXTRA_SEARCH_PATH`; `RequestSettings`).
    public let extraSearchPath: [String]
    private let timeToLive: Duration
    private let retryInterval: Duration
    private let state = NIOLockedValueBox(State())

    /// A cache of `schemas` read through `pool`; empty until the first `reload` or request. `timeToLive`: how long a load
    /// is trusted; `retryInterval`: the least time between two reloads asked for by unknown names.
    public init(
        pool: PostgresPool, schemas: [String], extraSearchPath: [String] = ["public"], timeToLive: Duration = .seconds(30),
        retryInterval: Duration = .seconds(1)
    ) {
        self.pool = pool
        self.schemas = schemas
        self.extraSearchPath = extraSearchPath
        self.timeToLive = timeToLive
        self.retryInterval = retryInterval
    }

    /// Every overload of `schema.name`; reloads once if none is known or `mustReload` (a signature did not match).
    public func overloads(schema: String, name: String, mustReload: Bool = false) async throws -> [RPCFunction] {
        let key = schema + "." + name
        let (cached, loadedAt) = self.state.withLockedValue { ($0.functions[key], $0.loadedAt) }
        let now = ContinuousClock.now
        let stale = loadedAt.map { now - $0 > self.timeToLive } ?? true
        let mayRetry = loadedAt.map { now - $0 >= self.retryInterval } ?? true
        if let cached, !stale, !mustReload { return cached }
        if cached == nil || mustReload, !stale, !mayRetry { return cached ?? [] }
        try await self.loadShared(unlessLoaded: false)
        return self.state.withLockedValue { $0.functions[key] } ?? []
    }

    /// The relations of the exposed schemas; loads the cache first if it was never loaded or is stale, and once more
    /// (at most once per `retryInterval`) when `schema.name` is unknown, so a table created by a migration is found.
    public func relations(schema: String, name: String) async throws -> RelationCatalog {
        let (catalog, loadedAt) = self.state.withLockedValue { ($0.relations, $0.loadedAt) }
        let now = ContinuousClock.now
        let stale = loadedAt.map { now - $0 > self.timeToLive } ?? true
        let mayRetry = loadedAt.map { now - $0 >= self.retryInterval } ?? true
        if !stale, catalog.relation(schema: schema, name: name) != nil || !mayRetry { return catalog }
        try await self.loadShared(unlessLoaded: false)
        return self.state.withLockedValue { $0.relations }
    }

    /// The relations as of the last load (loaded with the functions: an RPC call's result relation and its embeddings).
    public var relationCatalog: RelationCatalog { self.state.withLockedValue { $0.relations } }

    /// Tables of the exposed schemas an API role can write while row-level security is off (as of the last load).
    public var writableWithoutRowSecurity: [String] { self.state.withLockedValue { $0.relations.writableWithoutRowSecurity } }

    /// Reloads the cache: returns once a load that started after this call has finished (see the type's comment).
    public func reload() async throws {
        let asked = self.state.withLockedValue { state in
            state.reloadsAsked += 1
            return state.reloadsAsked
        }
        while true {
            let next: (task: Task<Void, any Error>, coversThisCall: Bool)? = self.state.withLockedValue { state in
                if state.reloadsCovered >= asked { return nil }
                if let running = state.reloading { return (running.task, running.covers >= asked) }
                return (self.startLoad(&state), true)
            }
            guard let next else { return }
            do {
                try await next.task.value
            } catch  where !next.coversThisCall {
                continue  // an earlier load failed: this call's own load comes next
            }
        }
    }

    /// Loads the cache unless a load has completed already (the server's start warms it: a request that got there first
    /// has loaded it, and a second load now could pick up a change that only a reload should bring), or waits for the
    /// load already running.
    public func loadIfNeverLoaded() async throws {
        try await self.loadShared(unlessLoaded: true)
    }

    /// Waits for the load already running, or starts one (unless `unlessLoaded` and a load has completed).
    private func loadShared(unlessLoaded: Bool) async throws {
        let task: Task<Void, any Error>? = self.state.withLockedValue { state in
            if let running = state.reloading { return running.task }
            if unlessLoaded, state.loadedAt != nil { return nil }
            return self.startLoad(&state)
        }
        try await task?.value
    }

    /// Starts a load (none may be running); it covers every explicit reload asked for until now.
    private func startLoad(_ state: inout State) -> Task<Void, any Error> {
        let covers = state.reloadsAsked
        let task = Task {
            defer { self.state.withLockedValue { $0.reloading = nil } }
            try await self.load()
            self.state.withLockedValue { $0.reloadsCovered = max($0.reloadsCovered, covers) }
        }
        state.reloading = (task, covers)
        return task
    }

    /// How many catalog queries have run (tests).
    var loadCount: Int { self.state.withLockedValue { $0.loads } }

    /// How many explicit reloads have been asked for (tests).
    var reloadsAsked: Int { self.state.withLockedValue { $0.reloadsAsked } }

    private func load() async throws {
        self.state.withLockedValue { $0.loads += 1 }
        let functionQuery = PostgresStatement(
            """
            SELECT n.nspname::text AS schema, p.proname::text AS name, p.provolatile::text AS volatility, p.proretset AS returns_set,
                   t.typtype::text AS return_kind, t.typname::text AS return_type,
                   to_json(coalesce(p.proargnames, array[]::text[])) AS arg_names,
                   to_json(coalesce(p.proargmodes::text[], array[]::text[])) AS arg_modes,
                   to_json(array(SELECT format_type(a.type, NULL) FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]))
                                 WITH ORDINALITY AS a(type, position) ORDER BY a.position)) AS arg_types,
                   p.pronargdefaults AS default_count,
                   (SELECT json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod),
                                                      'nullable', true, 'generated', false) ORDER BY a.attnum)
                    FROM pg_catalog.pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped) AS type_columns,
                   rn.nspname::text AS result_schema, rc.relname::text AS result_relation
            FROM pg_catalog.pg_proc p
            JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
            JOIN pg_catalog.pg_type t ON t.oid = p.prorettype
            LEFT JOIN pg_catalog.pg_class rc ON rc.oid = t.typrelid AND rc.relkind IN ('r', 'p', 'v', 'm', 'f')
            LEFT JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace
            WHERE n.nspname = ANY (string_to_array($1, ',')) AND p.prokind = 'f' AND t.typname <> 'trigger'
            """,
            [self.schemas.joined(separator: ",")]
        )
        let relationQuery = PostgresStatement(RelationCatalog.query, [self.schemas.joined(separator: ",")])
        // One snapshot for both, and an empty search_path so every type name and default comes out schema-qualified.
        let results = try await self.pool.withConnection { connection in
            try await connection.run { connection in
                try connection.pipeline([
                    PostgresStatement("BEGIN READ ONLY"), PostgresStatement("SELECT set_config('search_path', '', true)"), functionQuery,
                    relationQuery, PostgresStatement("COMMIT"),
                ])
            }
        }
        let result = results[2]
        let relations = try RelationCatalog(json: try results[3].first?.decode(String.self, at: 0) ?? "{}")
        var functions: [String: [RPCFunction]] = [:]
        for row in result.rows {
            let names = try row.decode(PostgresJSON.self, "arg_names").decode([String].self)
            let modes = try row.decode(PostgresJSON.self, "arg_modes").decode([String].self)
            let types = try row.decode(PostgresJSON.self, "arg_types").decode([String].self)
            let defaults = try row.decode(Int.self, "default_count")
            var inputs: [(name: String, type: String)] = []
            var outputs: [Relation.Column] = []
            for (index, type) in types.enumerated() {
                let mode = modes.isEmpty ? "i" : modes[index]
                let name = index < names.count ? names[index] : ""
                if ["o", "b", "t"].contains(mode) {
                    outputs.append(Relation.Column(name: name, type: type, baseType: nil, nullable: true, defaultExpression: nil, generated: false))
                }
                guard ["i", "b", "v"].contains(mode) else { continue }
                inputs.append((name, type))
            }
            let arguments = inputs.enumerated().map { index, input in
                RPCFunction.Argument(name: input.name, typeName: input.type, hasDefault: index >= inputs.count - defaults)
            }
            let returnsSet = try row.decode(Bool.self, "returns_set")
            let returnKind = try row.decode(String.self, "return_kind")
            let returnType = try row.decode(String.self, "return_type")
            // RETURNS TABLE with one column has that column's type as its result type, but answers rows.
            let isRowType = returnKind == "c" || returnType == "record" || modes.contains("t")
            let shape: RPCFunction.Shape =
                returnType == "void" ? .void : returnsSet ? (isRowType ? .setOfRows : .setOfScalars) : (isRowType ? .row : .scalar)
            let typeColumns = try row.decode(PostgresJSON?.self, "type_columns")?.decode([Relation.Column].self) ?? []
            let resultSchema = try row.decode(String?.self, "result_schema")
            let resultTable = try row.decode(String?.self, "result_relation")
            let function = RPCFunction(
                schema: try row.decode(String.self, "schema"), name: try row.decode(String.self, "name"), arguments: arguments,
                shape: shape, isReadOnly: try row.decode(String.self, "volatility") != "v", resultColumns: outputs.isEmpty ? typeColumns : outputs,
                returnedTable: resultSchema.flatMap { schema in resultTable.map { (schema, $0) } }
            )
            functions[function.schema + "." + function.name, default: []].append(function)
        }
        self.state.withLockedValue { state in
            state.functions = functions
            state.relations = relations
            state.loadedAt = .now
        }
    }
}
