import Foundation
@testable import GuestPassApp
import GuestPassPostgres
import GuestPassTestSupport
import HTTPTypes
import HummingbirdTesting
import Testing

@testable import GuestPassStore

/// The schema cache's reload signals, end to end. Serialized: a SIGHUP reaches every server of the test process, so
/// while the SIGHUP test runs, the NOTIFY test's cache could be reloaded before its NOTIFY and never look stale. (Other
/// tests only see their caches reloaded, which changes nothing they check.)
@Suite(.serialized) struct SchemaReloadTests {
    /// A served tenant whose schema cache only reloads when told (the time-to-live is an hour: a busy machine must not
    /// reach it mid-test), or when a request names something unknown.
    private static func withReloadsOnlyWhenTold(
        _ body: @Sendable (TestService, TestTenant, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await TestService.with(examples: true) { configured in
            var service = configured
            service.configuration.catalogTimeToLive = .seconds(3600)
            let tenant = try await service.createTenant()
            let served = service
            try await served.withServer { client in try await body(served, tenant, client) }
        }
    }

    /// The server's listening session, in `pg_stat_activity` of the test's database.
    private static let listenerSession = "datname = current_database() AND query = 'LISTEN pgrst' AND pid <> pg_backend_pid()"
    /// A reading with the column `addStaleColumn` adds.
    private static let withMood = #"{"kind":"palm","mood":"calm"}"#

    /// Once the server's `LISTEN pgrst` holds (a NOTIFY sent before reaches nobody) and its cache knows `readings`, adds
    /// the column `mood` behind the cache's back and checks that a write naming it is refused; returns the guest.
    private static func addStaleColumn(
        _ service: TestService, _ tenant: TestTenant, _ client: any TestClientProtocol
    ) async throws -> RPCTests.Guest {
        let owner = service.owner
        let listening = "SELECT count(*)::int FROM pg_stat_activity WHERE \(Self.listenerSession)"
        let held = try await eventually(timeout: .seconds(10)) { try await owner.execute(listening).rows[0].decode(Int.self, at: 0) == 1 }
        try #require(held, "the server listens")
        let guest = try await RPCTests.guest(client, tenant)
        #expect(try await TableTests.table(client, tenant, .get, "readings", guest).status == .ok, "the cache knows readings")
        try await owner.execute("ALTER TABLE public.readings ADD COLUMN mood text")
        let stale = try await TableTests.table(client, tenant, .post, "readings", guest, json: Self.withMood)
        #expect(stale.status == .badRequest)
        #expect(stale.errorCode == PostgRESTCode.columnNotFound, "a column the cache does not know yet")
        return guest
    }

    @Test func notifyPgrstReloadsTheSchemaCache() async throws {
        try await Self.withReloadsOnlyWhenTold { service, tenant, client in
            let guest = try await Self.addStaleColumn(service, tenant, client)
            try await service.owner.execute("NOTIFY pgrst, 'reload schema'")
            let reloaded = try await eventually(timeout: .seconds(10)) {
                try await TableTests.table(client, tenant, .post, "readings", guest, json: Self.withMood).status == .created
            }
            #expect(reloaded, "NOTIFY pgrst, 'reload schema' reloads the cache")
        }
    }

    /// NOTIFYs sent while the listening connection is lost are gone, so once it listens again the cache is reloaded.
    @Test func aListenerThatReconnectsReloadsTheCache() async throws {
        try await Self.withReloadsOnlyWhenTold { service, tenant, client in
            let guest = try await Self.addStaleColumn(service, tenant, client)
            let terminated = try await service.owner.execute(
                "SELECT (count(*) FILTER (WHERE pg_terminate_backend(pid)))::int FROM pg_stat_activity WHERE \(Self.listenerSession)"
            ).rows[0].decode(Int.self, at: 0)
            try #require(terminated == 1, "the listener's connection is cut")
            let reloaded = try await eventually(timeout: .seconds(15)) {
                try await TableTests.table(client, tenant, .post, "readings", guest, json: Self.withMood).status == .created
            }
            #expect(reloaded, "the listener reloads the cache once it listens again")
        }
    }

    /// A function replaced with another result shape is seen at once after SIGHUP (a reload signal).
    @Test func hangupReloadsChangedSignatures() async throws {
        try await Self.withReloadsOnlyWhenTold { service, tenant, client in
            let guest = try await RPCTests.guest(client, tenant)
            try await service.owner.execute("CREATE FUNCTION public.shape_probe() RETURNS integer LANGUAGE sql STABLE AS $$ SELECT 7 $$")
            try await service.owner.execute("GRANT EXECUTE ON FUNCTION public.shape_probe() TO authenticated")
            #expect(try await eventually(timeout: .seconds(5)) { try await RPCTests.rpc(client, tenant, "shape_probe", guest).text == "7" })
            try await service.owner.executeScript(
                """
                DROP FUNCTION public.shape_probe();
                CREATE FUNCTION public.shape_probe() RETURNS TABLE (n integer) LANGUAGE sql STABLE AS $$ SELECT 7 $$;
                GRANT EXECUTE ON FUNCTION public.shape_probe() TO authenticated;
                """
            )
            // A known name with a changed shape does not trigger a reload by itself: only the signal does. It is sent
            // again while the old shape answers, in case the server's listener had not yet subscribed to it.
            let reshaped = try await eventually(timeout: .seconds(10)) {
                kill(getpid(), SIGHUP)
                return try await RPCTests.rpc(client, tenant, "shape_probe", guest).text == #"[{"n":7}]"#
            }
            #expect(reshaped, "SIGHUP reloads the catalog")
        }
    }
}
