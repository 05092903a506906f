import Foundation
import GuestPassJSON
import GuestPassPostgres
import RealtimeProtocol
import Testing

@testable import GuestPassApp
@testable import GuestPassStore

/// Who may see a captured row: the table's SELECT policies evaluated on the image under the subscriber's identity,
/// filters with PostgreSQL's types, hidden columns cut, and a policy that raises failing only its own identity. The
/// socket-level behaviour is in `e2e/test_realtime*.py`.
@Suite struct RealtimeVisibilityTests {
    static func claims(user: UUID, app: UUID, device: UUID? = nil) -> RequestIdentity {
        var claims = #"{"role":"authenticated","sub":"\#(user.lowercasedString)","app_id":"\#(app.lowercasedString)""#
        if let device { claims += #","device_id":"\#(device.lowercasedString)""# }
        return RequestIdentity(role: .authenticated, claimsJSON: claims + "}")
    }

    static func reading(user: UUID, app: UUID, kind: String = "palm") -> String {
        #"{"id":"\#(UUID().lowercasedString)","app_id":"\#(app.lowercasedString)","user_id":"\#(user.lowercasedString)","kind":"\#(kind)","content":{},"created_at":"2026-11-25T10:00:00+00:00"}"#
    }

    @Test func aRowImageIsVisibleToItsOwnerOnlyEvenWhenTheRowIsGone() async throws {
        try await TestService.with(examples: true) { service in
            let pool = PostgresPool(configuration: service.configuration.postgres)
            let tables = RealtimeTables(pool: pool)
            let table = try #require(try await tables.table(schema: "public", name: "readings", role: .authenticated))
            #expect(table.rowSecurity && !table.policies.isEmpty)
            let (app, otherApp, alice, bob) = (UUID(), UUID(), UUID(), UUID())
            // No such rows exist: the images are what a DELETE leaves behind.
            let images = [Self.reading(user: alice, app: app), Self.reading(user: bob, app: app), Self.reading(user: alice, app: otherApp)]
            let forAlice = try await RealtimeVisibility.check(
                pool: pool, identity: Self.claims(user: alice, app: app), table: table, images: images, filters: [])
            #expect(forAlice.visible == [true, false, false])
            let forBob = try await RealtimeVisibility.check(
                pool: pool, identity: Self.claims(user: bob, app: app), table: table, images: images, filters: [])
            #expect(forBob.visible == [false, true, false])
            let anonTable = try #require(try await tables.table(schema: "public", name: "readings", role: .anon))
            let forAnon = try await RealtimeVisibility.check(
                pool: pool, identity: RequestIdentity(role: .anon, claimsJSON: #"{"role":"anon"}"#), table: anonTable, images: images,
                filters: [])
            #expect(forAnon.visible == [false, false, false])
            await pool.shutdown()
        }
    }

    @Test func filtersCompareWithTheColumnsTypesAndBadValuesAreNamed() async throws {
        try await TestService.with(examples: true) { service in
            let pool = PostgresPool(configuration: service.configuration.postgres)
            let table = try #require(try await RealtimeTables(pool: pool).table(schema: "public", name: "readings", role: .authenticated))
            let (app, alice) = (UUID(), UUID())
            let images = ["palm", "face", "coffee"].map { Self.reading(user: alice, app: app, kind: $0) }
            let filters: [[RealtimeFilter.Condition]] = [
                [RealtimeFilter.Condition(column: "kind", op: .eq, value: .single("palm"))],
                [RealtimeFilter.Condition(column: "kind", op: .in, value: .list(["face", "coffee"]))],
                [RealtimeFilter.Condition(column: "kind", op: .in, negated: true, value: .list(["face", "coffee"]))],
                [
                    RealtimeFilter.Condition(column: "user_id", op: .eq, value: .single(alice.lowercasedString)),
                    RealtimeFilter.Condition(column: "kind", op: .neq, value: .single("palm")),
                ],
                [RealtimeFilter.Condition(column: "created_at", op: .lt, value: .single("2026-11-25T11:00:00+01:00"))],
                [],
            ]
            let verdicts = try await RealtimeVisibility.check(
                pool: pool, identity: Self.claims(user: alice, app: app), table: table, images: images, filters: filters)
            #expect(verdicts.matches[0] == [true, false, true, false, false, true], "10:00Z is not before 11:00+01:00")
            #expect(verdicts.matches[1] == [false, true, false, true, false, true])
            #expect(verdicts.matches[2] == [false, true, false, true, false, true])
            let bad = try await RealtimeVisibility.validateValues(
                pool: pool, table: table, conditions: [RealtimeFilter.Condition(column: "user_id", op: .eq, value: .single("not-a-uuid"))])
            #expect(bad?.contains("uuid") == true)
            let fine = try await RealtimeVisibility.validateValues(
                pool: pool, table: table,
                conditions: [RealtimeFilter.Condition(column: "created_at", op: .in, value: .list(["2026-01-01", "2026-02-01"]))])
            #expect(fine == nil)
            await pool.shutdown()
        }
    }

    @Test func hiddenColumnsAreCutAndARaisingPolicyFailsOnlyItsIdentity() async throws {
        try await TestService.with(examples: true) { service in
            _ = try await service.owner.withConnection { connection in
                try await connection.executeScript(
                    """
                    create table public.rt_probe (id int primary key, owner uuid not null, secret text);
                    alter table public.rt_probe enable row level security;
                    grant select (id, owner) on public.rt_probe to authenticated;
                    create policy rt_probe_own on public.rt_probe for select to authenticated
                        using (case when owner = '00000000-0000-0000-0000-000000000001' then (1 / (id - id)) = 1 else owner = (select auth.uid()) end);
                    """)
            }
            let pool = PostgresPool(configuration: service.configuration.postgres)
            let table = try #require(try await RealtimeTables(pool: pool).table(schema: "public", name: "rt_probe", role: .authenticated))
            #expect(table.hiddenColumns == ["secret"])
            let (app, alice) = (UUID(), UUID())
            let image = #"{"id":1,"owner":"\#(alice.lowercasedString)","secret":"s3cr3t"}"#
            let verdicts = try await RealtimeVisibility.check(
                pool: pool, identity: Self.claims(user: alice, app: app), table: table, images: [image], filters: [])
            #expect(verdicts.visible == [true])
            let trimmed = try #require(verdicts.trimmedImages[0])
            #expect(!trimmed.contains("s3cr3t") && trimmed.contains("owner"))
            let raising = #"{"id":2,"owner":"00000000-0000-0000-0000-000000000001","secret":null}"#
            await #expect(throws: PostgresError.self) {
                _ = try await RealtimeVisibility.check(
                    pool: pool, identity: Self.claims(user: alice, app: app), table: table, images: [image, raising], filters: [])
            }
            // The same pool serves the next identity: the failed check's transaction left nothing behind.
            let again = try await RealtimeVisibility.check(
                pool: pool, identity: Self.claims(user: alice, app: app), table: table, images: [image], filters: [])
            #expect(again.visible == [true])
            await pool.shutdown()
        }
    }
}

/// `RealtimePrefilter` may skip a check only when PostgreSQL would reject the row too: every spelling it decides is
/// compared with PostgreSQL's own verdict on the same image and filter.
@Suite struct RealtimePrefilterTests {
    @Test func aSkippedRowIsOneThatPostgreSQLRejectsToo() async throws {
        try await TestService.with(examples: false) { service in
            _ = try await service.owner.executeScript(
                "create table public.rt_types (id int primary key, t text, u uuid, i int8, s int2, b bool); grant select on public.rt_types to authenticated;"
            )
            let pool = PostgresPool(configuration: service.configuration.postgres)
            let table = try #require(try await RealtimeTables(pool: pool).table(schema: "public", name: "rt_types", role: .authenticated))
            let uuid = "0b6e5c4a-1f2e-4d3c-9b8a-7f6e5d4c3b2a"
            let images = [
                #"{"id":1,"t":"palm","u":"\#(uuid)","i":5,"s":-3,"b":true}"#,
                #"{"id":2,"t":"Palm","u":"\#(uuid.uppercased())","i":9007199254740993,"s":0,"b":false}"#,
                #"{"id":3,"t":" palm","u":null,"i":null,"s":null,"b":null}"#,
            ]
            let spellings: [(String, [String])] = [
                ("t", ["palm"]), ("t", ["Palm", "x"]), ("t", [" palm"]), ("t", ["palm "]),
                ("u", [uuid]), ("u", [uuid.uppercased()]), ("u", ["{\(uuid)}"]), ("u", [uuid.replacingOccurrences(of: "-", with: "")]),
                ("i", ["5"]), ("i", [" 5 "]), ("i", ["+5"]), ("i", ["05"]), ("i", ["9007199254740993"]), ("i", ["5", "6"]),
                ("s", ["-3"]), ("s", ["-03"]), ("s", ["0"]),
                ("b", ["true"]), ("b", ["t"]), ("b", ["YES"]), ("b", [" on "]), ("b", ["1"]), ("b", ["f"]), ("b", ["off"]), ("b", ["no"]),
            ]
            let filters = spellings.map {
                [RealtimeFilter.Condition(column: $0.0, op: $0.1.count == 1 ? .eq : .in, value: $0.1.count == 1 ? .single($0.1[0]) : .list($0.1))]
            }
            let claims = RequestIdentity(role: .authenticated, claimsJSON: #"{"role":"authenticated"}"#)
            let verdicts = try await RealtimeVisibility.check(pool: pool, identity: claims, table: table, images: images, filters: filters)
            var decided = 0
            for (row, image) in images.enumerated() {
                let members = try #require(try JSONValue.parse(image).objectValue)
                for (index, conditions) in filters.enumerated() {
                    let mayMatch = RealtimePrefilter.mayMatch(conditions, image: members, table: table)
                    if !mayMatch {
                        decided += 1
                        #expect(!verdicts.matches[row][index], "prefilter skipped \(spellings[index]) for row \(row + 1), PostgreSQL matches")
                    }
                    if verdicts.matches[row][index] { #expect(mayMatch) }
                }
            }
            #expect(decided > 20, "the prefilter decided \(decided) of \(images.count * filters.count): it must skip most non-matches")
            await pool.shutdown()
        }
    }
}
