import Foundation
import GuestPassJSON
import GuestPassPostgres
import RealtimeProtocol
import Testing

@testable import GuestPassApp
@testable import GuestPassStore

/// Many identities checked in one transaction (`RealtimeVisibility.check(pool:table:batch:)`) see exactly what each
/// would see alone: its own claims, nothing another identity's statements left behind, a raising policy failing only
/// its identity once the dispatch reruns the batch one by one. And the poll's index (`RealtimeTableChanges`) hands each
/// group exactly the candidates the prefilter alone would pick.
@Suite struct RealtimeBatchTests {
    typealias Visibility = RealtimeVisibilityTests

    @Test func aBatchChecksEachIdentityUnderItsOwnClaims() async throws {
        try await TestService.with(examples: true) { service in
            let pool = PostgresPool(configuration: service.configuration.postgres)
            let table = try #require(try await RealtimeTables(pool: pool).table(schema: "public", name: "readings", role: .authenticated))
            let (app, otherApp) = (UUID(), UUID())
            let users = (0..<6).map { _ in UUID() }
            let images = users.map { Visibility.reading(user: $0, app: app) } + [Visibility.reading(user: users[0], app: otherApp)]
            // Each identity asks about every image, with a filter on its own id and one on its neighbour's.
            let batch = users.enumerated().map { index, user in
                RealtimeCheck(
                    identity: Visibility.claims(user: user, app: app), images: images,
                    filters: [
                        [RealtimeFilter.Condition(column: "user_id", op: .eq, value: .single(user.lowercasedString))],
                        [RealtimeFilter.Condition(column: "user_id", op: .eq, value: .single(users[(index + 1) % users.count].lowercasedString))],
                    ])
            }
            let together = try await RealtimeVisibility.check(pool: pool, table: table, batch: batch)
            #expect(together.count == users.count)
            for (index, verdicts) in together.enumerated() {
                let expected = images.indices.map { $0 == index }
                #expect(verdicts.visible == expected, "identity \(index) sees \(verdicts.visible)")
                #expect(verdicts.matches[index] == [true, false])
                #expect(verdicts.matches[(index + 1) % users.count] == [false, true], "a filter is the row's, not the identity's")
                let alone = try await RealtimeVisibility.check(
                    pool: pool, identity: batch[index].identity, table: table, images: images, filters: batch[index].filters)
                #expect(alone.visible == verdicts.visible && alone.matches == verdicts.matches)
            }
            // An identity with nothing to check costs no statement and sees nothing.
            let empty = try await RealtimeVisibility.check(
                pool: pool, table: table, batch: [RealtimeCheck(identity: batch[0].identity, images: [], filters: [])] + batch.prefix(1))
            #expect(empty[0].visible.isEmpty && empty[1].visible == images.indices.map { $0 == 0 })
            await pool.shutdown()
        }
    }

    /// A policy whose function leaves a transaction-local setting behind must not change the next identity's verdict:
    /// each identity's statement is rolled back to the batch's savepoint before the next one runs.
    @Test func nothingOneIdentityLeavesInTheTransactionReachesTheNext() async throws {
        try await TestService.with(examples: true) { service in
            _ = try await service.owner.withConnection { connection in
                try await connection.executeScript(
                    """
                    create table public.rt_sticky (id int primary key, owner uuid not null);
                    alter table public.rt_sticky enable row level security;
                    grant select on public.rt_sticky to authenticated;
                    create function public.rt_sticky_seen() returns boolean language plpgsql volatile as $$
                    begin
                        if current_setting('rt.sticky', true) = 'on' then return true; end if;
                        perform set_config('rt.sticky', 'on', true);
                        return false;
                    end $$;
                    grant execute on function public.rt_sticky_seen() to authenticated;
                    create policy rt_sticky_own on public.rt_sticky for select to authenticated
                        using (owner = (select auth.uid()) or public.rt_sticky_seen());
                    """)
            }
            let pool = PostgresPool(configuration: service.configuration.postgres)
            let table = try #require(try await RealtimeTables(pool: pool).table(schema: "public", name: "rt_sticky", role: .authenticated))
            let app = UUID()
            let users = (0..<4).map { _ in UUID() }
            // Each identity is asked about one row of another user: alone, nobody sees anything.
            let batch = users.enumerated().map { index, user in
                RealtimeCheck(
                    identity: Visibility.claims(user: user, app: app),
                    images: [#"{"id":\#(index),"owner":"\#(users[(index + 1) % users.count].lowercasedString)"}"#], filters: [])
            }
            let verdicts = try await RealtimeVisibility.check(pool: pool, table: table, batch: batch)
            #expect(verdicts.map(\.visible) == users.map { _ in [false] }, "a setting of one identity's check reached the next")
            await pool.shutdown()
        }
    }

    @Test func aRaisingPolicyFailsOnlyItsIdentityInTheDispatch() async throws {
        try await TestService.with(examples: true) { service in
            _ = try await service.owner.withConnection { connection in
                try await connection.executeScript(
                    """
                    create table public.rt_raise (id int primary key, owner uuid not null);
                    alter table public.rt_raise enable row level security;
                    grant select on public.rt_raise to authenticated;
                    create policy rt_raise_own on public.rt_raise for select to authenticated
                        using (case when (select auth.uid()) = '00000000-0000-0000-0000-000000000001' then (1 / (id - id)) = 1
                                    else owner = (select auth.uid()) end);
                    """)
            }
            let pool = PostgresPool(configuration: service.configuration.postgres)
            let table = try #require(try await RealtimeTables(pool: pool).table(schema: "public", name: "rt_raise", role: .authenticated))
            let app = UUID()
            let users = [UUID(), UUID(uuidString: "00000000-0000-0000-0000-000000000001")!, UUID()]
            let changes = users.enumerated().map { index, user in
                CapturedChange(
                    seq: Int64(index + 1), kind: .insert, schema: "public", table: "rt_raise", appID: nil, topic: nil, event: nil,
                    record: #"{"id":\#(index),"owner":"\#(user.lowercasedString)"}"#, oldRecord: nil, origin: nil,
                    commitTimestamp: "2026-11-25T10:00:00.000Z")
            }
            let groups = users.map { user in
                RealtimeGroupCheck(
                    table: table, channels: [Self.subscriber(Visibility.claims(user: user, app: app), app: app, table: "rt_raise")],
                    changes: changes)
            }
            let answers = await RealtimeGroupCheck.verdicts(of: groups, pool: pool)
            #expect(answers.count == 3)
            for (index, answer) in answers.enumerated() {
                switch answer {
                case .success(let verdicts):
                    #expect(index != 1, "the raising identity got verdicts")
                    #expect(verdicts.visible == changes.indices.flatMap { [$0 == index, false] })
                case .failure:
                    #expect(index == 1, "identity \(index) lost its changes to another's raising policy")
                }
            }
            await pool.shutdown()
        }
    }

    /// The index narrows, the prefilter decides: for every binding and spelling, the candidates are exactly the changes
    /// a scan of all of them with `RealtimePrefilter.mayMatch` (and the binding's kind and the app) picks.
    @Test func theIndexPicksWhatAScanPicks() throws {
        let app = UUID()
        let uuid = "0b6e5c4a-1f2e-4d3c-9b8a-7f6e5d4c3b2a"
        let table = RealtimeTable(
            schema: "public", name: "t", published: true,
            columns: [("id", "int4"), ("u", "uuid"), ("t", "text"), ("b", "bool"), ("at", "timestamptz")].map {
                RealtimeTable.Column(name: $0.0, type: $0.1, sqlType: $0.1, selectable: true)
            }, primaryKey: ["id"], rowSecurity: false, bypassesRowSecurity: false, policies: [])
        let images = [
            #"{"id":1,"u":"\#(uuid)","t":"palm","b":true,"at":"2026-01-01"}"#, #"{"id":2,"u":"\#(uuid.uppercased())","t":"Palm","b":false}"#,
            #"{"id":3,"u":null,"t":null,"b":null}"#, #"{"id":"x","u":5,"t":7,"b":"yes"}"#, #"{"id":5}"#, "not json", #"{"id":7,"u":"{\#(uuid)}"}"#,
            #"{"id":+8}"#,
        ]
        let changes = images.enumerated().map { index, image in
            CapturedChange(
                seq: Int64(index + 1), kind: index % 3 == 2 ? .update : .insert, schema: "public", table: "t",
                appID: index == 4 ? UUID() : (index == 5 ? nil : app), topic: nil, event: nil, record: image,
                oldRecord: nil, origin: nil, commitTimestamp: "")
        }
        let index = RealtimeTableChanges(schema: "public", name: "t", table: table, changes: changes, parseImages: true)
        let conditionSets: [[RealtimeFilter.Condition]] = [
            [], [.init(column: "id", op: .eq, value: .single("1"))], [.init(column: "id", op: .in, value: .list(["5", " 7 ", "2"]))],
            [.init(column: "u", op: .eq, value: .single(uuid.uppercased()))], [.init(column: "u", op: .eq, value: .single("nope"))],
            [.init(column: "t", op: .in, value: .list(["palm", "Palm"]))], [.init(column: "b", op: .eq, value: .single("on"))],
            [.init(column: "b", op: .eq, value: .single("of"))], [.init(column: "t", op: .eq, negated: true, value: .single("palm"))],
            [.init(column: "at", op: .eq, value: .single("2026-01-01"))], [.init(column: "missing", op: .eq, value: .single("1"))],
            [.init(column: "t", op: .neq, value: .single("x")), .init(column: "id", op: .eq, value: .single("5"))],
        ]
        for conditions in conditionSets {
            for kind in [nil, CapturedChange.Kind.insert, .update] {
                let binding = ChannelBinding(id: 1, kind: kind, schema: "public", table: "t", conditions: conditions)
                var channel = Self.subscriber(RequestIdentity(role: .authenticated, claimsJSON: "{}"), app: app, table: "t")
                channel.bindings = [binding]
                let scanned = changes.indices.filter { position in
                    let change = changes[position]
                    guard change.appID == nil || change.appID == app, binding.wants(change) else { return false }
                    let members = change.record.flatMap { (try? JSONValue.parse($0))?.objectValue }
                    return RealtimePrefilter.mayMatch(conditions, image: members, table: table)
                }
                #expect(index.candidates(for: [channel], app: app) == scanned, "\(conditions) \(String(describing: kind))")
            }
        }
        // Several channels of one identity: the union, each change once, in order.
        for (first, second) in zip(conditionSets, conditionSets.dropFirst(3)) {
            let channels = [first, second, first].enumerated().map { position, conditions in
                var channel = Self.subscriber(RequestIdentity(role: .authenticated, claimsJSON: "{}"), app: app, table: "t")
                channel.bindings = [ChannelBinding(id: position + 1, kind: nil, schema: "public", table: "t", conditions: conditions)]
                return channel
            }
            let union = Set(index.candidates(for: [channels[0]], app: app) + index.candidates(for: [channels[1]], app: app))
            #expect(index.candidates(for: channels, app: app) == union.sorted(), "\(first) + \(second)")
        }
    }

    static func subscriber(_ identity: RequestIdentity, app: UUID, table: String) -> RealtimeSubscriber {
        RealtimeSubscriber(
            socketID: UUID(), outbox: RealtimeOutbox(maxFrames: 10, maxBytes: 1 << 20), version: .v1, topic: "realtime:t", joinRef: "1",
            appID: app, identity: identity, sessionID: nil, expiresAt: nil,
            bindings: [ChannelBinding(id: 1, kind: nil, schema: "public", table: table, conditions: [])], broadcastSelf: false,
            broadcastAck: false, presenceKey: nil)
    }
}
