import Foundation
import GuestPassPostgres
import Testing

@testable import GuestPassApp
@testable import GuestPassStore

/// The RPC function catalog reloads single-flight: a burst of requests naming unknown functions costs one query.
@Suite struct SchemaCacheTests {
    @Test func concurrentReloadsShareOneCatalogQuery() async throws {
        try await TestService.with(examples: true) { service in
            var configuration = service.configuration.postgres
            configuration.maxConnections = 2
            let pool = PostgresPool(configuration: configuration)
            let catalog = SchemaCache(pool: pool, schemas: ["public"])

            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<100 {
                    group.addTask { try await catalog.overloads(schema: "public", name: "no_such_function_\(index)").count }
                }
                for try await found in group { #expect(found == 0) }
            }
            #expect(catalog.loadCount == 1, "100 concurrent callers, one catalog query")
            #expect(try await catalog.overloads(schema: "public", name: "get_quota").count == 1)
            #expect(catalog.loadCount == 1, "a known function needs no reload")
            await pool.shutdown()
        }
    }

    /// The server's start warms the cache only if no request has loaded it: a second load after a request's could bring
    /// a change that only a reload (NOTIFY, SIGHUP, the time-to-live) should (TableTests.notifyPgrstReloadsTheSchemaCache
    /// raced it on a loaded machine).
    @Test func theStartLoadLeavesACacheARequestLoadedAlone() async throws {
        try await TestService.with(examples: true) { service in
            let pool = PostgresPool(configuration: service.configuration.postgres)
            let catalog = SchemaCache(pool: pool, schemas: ["public"])
            try await catalog.loadIfNeverLoaded()
            #expect(catalog.loadCount == 1, "a cache never loaded is loaded")
            _ = try await catalog.relations(schema: "public", name: "readings")
            try await catalog.loadIfNeverLoaded()
            #expect(catalog.loadCount == 1, "a loaded cache is left alone")
            try await catalog.reload()
            #expect(catalog.loadCount == 2, "a reload always loads")
            await pool.shutdown()
        }
    }
}
