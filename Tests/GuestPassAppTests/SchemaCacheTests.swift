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
}
