import Foundation
import GuestPassPostgres
import GuestPassTestSupport
import Testing

@testable import GuestPassApp
@testable import GuestPassStore

/// A cache of the example schema read through a pool of its own (at most `maxConnections`), shut down afterwards.
private func withCatalog(maxConnections: Int? = nil, _ body: (PostgresPool, SchemaCache) async throws -> Void) async throws {
    try await TestService.with(examples: true) { service in
        var configuration = service.configuration.postgres
        if let maxConnections { configuration.maxConnections = maxConnections }
        let pool = PostgresPool(configuration: configuration)
        try await withCleanup {
            try await body(pool, SchemaCache(pool: pool, schemas: ["public"]))
        } cleanup: {
            await pool.shutdown()
        }
    }
}

/// The RPC function catalog reloads single-flight: a burst of requests naming unknown functions costs one query.
@Suite struct SchemaCacheTests {
    @Test func concurrentReloadsShareOneCatalogQuery() async throws {
        try await withCatalog(maxConnections: 2) { _, catalog in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<100 {
                    group.addTask { try await catalog.overloads(schema: "public", name: "no_such_function_\(index)").count }
                }
                for try await found in group { #expect(found == 0) }
            }
            #expect(catalog.loadCount == 1, "100 concurrent callers, one catalog query")
            #expect(try await catalog.overloads(schema: "public", name: "get_quota").count == 1)
            #expect(catalog.loadCount == 1, "a known function needs no reload")
        }
    }

    /// The server's start warms the cache only if no request has loaded it: a second load after a request's could bring
    /// a change that only a reload (NOTIFY, SIGHUP, the time-to-live) should (TableTests.notifyPgrstReloadsTheSchemaCache
    /// raced it on a loaded machine).
    @Test func theStartLoadLeavesACacheARequestLoadedAlone() async throws {
        try await withCatalog { _, catalog in
            try await catalog.loadIfNeverLoaded()
            #expect(catalog.loadCount == 1, "a cache never loaded is loaded")
            _ = try await catalog.relations(schema: "public", name: "readings")
            try await catalog.loadIfNeverLoaded()
            #expect(catalog.loadCount == 1, "a loaded cache is left alone")
            try await catalog.reload()
            #expect(catalog.loadCount == 2, "a reload always loads")
        }
    }

    /// A reload (NOTIFY, SIGHUP) asked for while a load runs is answered by a load that starts after it: the running one
    /// may have read the catalog before the change the reload announces. All reloads asked for meanwhile share that one.
    @Test func reloadsAskedDuringALoadGetOneLoadThatStartsAfterIt() async throws {
        try await withCatalog(maxConnections: 1) { pool, catalog in
            // The pool's one connection is held, so the first load waits (started, counted) until it is released.
            let holding = ManagedAtomicFlag()
            let release = ManagedAtomicFlag()
            let holder = Task {
                try await pool.withConnection { _ in
                    holding.set()
                    while !release.isSet { try await Task.sleep(for: .milliseconds(10)) }
                }
            }
            try #require(try await eventually(timeout: .seconds(10)) { holding.isSet })
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await catalog.reload() }
                try #require(try await eventually(timeout: .seconds(10)) { catalog.loadCount == 1 })
                for _ in 0..<20 { group.addTask { try await catalog.reload() } }
                try #require(try await eventually(timeout: .seconds(10)) { catalog.reloadsAsked == 21 })
                #expect(catalog.loadCount == 1, "the later reloads wait for the running load to end")
                release.set()
                try await group.waitForAll()
            }
            try await holder.value
            #expect(catalog.loadCount == 2, "the running load, then one load for the 20 reloads asked during it")
            try await catalog.reload()
            #expect(catalog.loadCount == 3, "a reload with no load running loads")
        }
    }
}
