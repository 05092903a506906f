import Foundation
import GuestPassJSON
import GuestPassPostgres
import GuestPassStore
import Logging
import RealtimeProtocol

/// Delivers one poll's worth of the change log to this process's channels.
///
/// Row changes are grouped by table, then the channels bound to that table by identity (role and verified claims)
/// and app. Each group's candidates are found through an index on the filter's column (`RealtimeTableChanges`), so
/// a poll costs the changes plus the channels, not their product. The groups of one table and role are checked in
/// batches of up to `identitiesPerCheck` identities, one transaction and one round trip per batch, each identity's
/// statement still run as that identity alone (`RealtimeVisibility.check(pool:table:batch:)`): which changes it may
/// see and which filters they pass, on the captured images. Each group's channels then get their events in `seq`
/// order. Batches run concurrently (at most `concurrentChecks` at a time, so REST keeps most of the pool); a batch that
/// fails is checked again identity by identity, so a check that fails (a policy that raises, a timeout) costs only
/// its own channels the batch, which they are told with a `system` error, never the others (Supabase's
/// realtime#2093). A row change whose table has an `app_id` column goes only to channels of that app, whatever the
/// policies say: the tenant boundary is not left to policy authors.
struct RealtimeDispatch: Sendable {
    let services: RealtimeServices
    let logger: Logger
    var concurrentChecks = 4
    var identitiesPerCheck = 64

    func deliver(_ changes: [CapturedChange]) async {
        guard !changes.isEmpty else { return }
        let subscribers = self.services.hub.subscribers
        var rowChanges: [CapturedChange] = []
        for change in changes {
            switch change.kind {
            case .broadcast: self.deliverBroadcast(change, to: subscribers)
            case .presence: self.deliverPresence(change, to: subscribers)
            case .insert, .update, .delete: rowChanges.append(change)
            }
        }
        RealtimeMetrics.captured(rowChanges.count)
        guard !rowChanges.isEmpty else { return }
        var order: [String] = []
        var byTable: [String: [CapturedChange]] = [:]
        for change in rowChanges {
            let key = (change.schema ?? "") + "." + (change.table ?? "")
            if byTable[key] == nil { order.append(key) }
            byTable[key, default: []].append(change)
        }
        var batches: [[RealtimeGroupCheck]] = []
        for key in order { batches += await self.groups(of: byTable[key]!, subscribers: subscribers) }
        await withTaskGroup(of: Void.self) { tasks in
            var running = 0
            for batch in batches {
                if running == self.concurrentChecks {
                    await tasks.next()
                    running -= 1
                }
                tasks.addTask { await self.deliver(batch) }
                running += 1
            }
        }
    }

    /// One table's changes as the groups of channels that may receive some, in batches of one role.
    private func groups(of tableChanges: [CapturedChange], subscribers: [RealtimeSubscriber]) async -> [[RealtimeGroupCheck]] {
        guard let schema = tableChanges[0].schema, let name = tableChanges[0].table else { return [] }
        let kinds = Set(tableChanges.map(\.kind))
        var groups: [String: [RealtimeSubscriber]] = [:]
        var groupOrder: [String] = []
        var filtered = false
        for channel in subscribers {
            let bindings = channel.bindings.filter { $0.schema == schema && $0.table == name && ($0.kind.map(kinds.contains) ?? true) }
            guard !bindings.isEmpty else { continue }
            filtered = filtered || bindings.contains { !$0.conditions.isEmpty }
            let key = channel.identityKey + "\u{0}" + channel.appID.uuidString
            if groups[key] == nil { groupOrder.append(key) }
            groups[key, default: []].append(channel)
        }
        var indexed: [DatabaseRole: RealtimeTableChanges] = [:]
        var byRole: [DatabaseRole: [RealtimeGroupCheck]] = [:]
        for key in groupOrder {
            let channels = groups[key]!
            let role = channels[0].identity.role
            if indexed[role] == nil {
                do {
                    guard let table = try await self.services.tables.table(schema: schema, name: name, role: role) else { continue }
                    indexed[role] = RealtimeTableChanges(schema: schema, name: name, table: table, changes: tableChanges, parseImages: filtered)
                } catch {
                    self.refuse(tableChanges.count, to: channels, schema: schema, name: name, error: error)
                    continue
                }
            }
            let index = indexed[role]!
            let candidates = index.candidates(for: channels, app: channels[0].appID)
            guard !candidates.isEmpty else { continue }
            byRole[role, default: []].append(
                RealtimeGroupCheck(table: index.table, channels: channels, changes: candidates.map { index.changes[$0] }))
        }
        var batches: [[RealtimeGroupCheck]] = []
        for role in DatabaseRole.allCases {
            guard let checks = byRole[role] else { continue }
            for start in stride(from: 0, to: checks.count, by: self.identitiesPerCheck) {
                batches.append(Array(checks[start..<min(start + self.identitiesPerCheck, checks.count)]))
            }
        }
        return batches
    }

    /// Checks one batch and pushes each group's events (or, to a group whose check failed, the `system` error).
    private func deliver(_ batch: [RealtimeGroupCheck]) async {
        let verdicts = await RealtimeGroupCheck.verdicts(of: batch, pool: self.services.pool)
        for (group, answer) in zip(batch, verdicts) {
            switch answer {
            case .success(let verdicts):
                group.events(verdicts) { channel, payload in
                    self.push(channel, event: "postgres_changes", payload: payload)
                    RealtimeMetrics.delivered()
                }
            case .failure(let error):
                self.refuse(group.changes.count, to: group.channels, schema: group.table.schema, name: group.table.name, error: error)
            }
        }
    }

    /// A check that failed: the identity's channels lose these changes and are told so; nobody else is affected.
    private func refuse(_ count: Int, to channels: [RealtimeSubscriber], schema: String, name: String, error: any Error) {
        RealtimeMetrics.dropped(count * channels.count)
        self.logger.warning("realtime: visibility check failed", metadata: ["table": "\(schema).\(name)", "error": "\(error)"])
        for channel in channels {
            self.push(
                channel, event: "system",
                payload: RealtimePayload.system(
                    .postgresChanges, .error,
                    message: "Changes of \(schema).\(name) could not be checked for this subscriber and were not delivered.",
                    channel: channel.channelName))
        }
    }

    private func deliverBroadcast(_ change: CapturedChange, to subscribers: [RealtimeSubscriber]) {
        guard let topic = change.topic, let event = change.event else { return }
        let receivers = subscribers.filter {
            $0.topic == topic && $0.appID == change.appID && ($0.socketID != change.origin || $0.broadcastSelf)
        }
        let payload = RealtimePayload.broadcast(event: event, payload: RealtimeJSON(unchecked: change.record ?? "{}"))
        self.push(receivers, topic: topic, event: "broadcast", payload: payload)
    }

    private func deliverPresence(_ change: CapturedChange, to subscribers: [RealtimeSubscriber]) {
        guard let topic = change.topic, let diff = change.record else { return }
        let receivers = subscribers.filter { $0.topic == topic && $0.appID == change.appID }
        self.push(receivers, topic: topic, event: "presence_diff", payload: RealtimeJSON(unchecked: diff))
    }

    /// A server push (null refs) to one channel.
    private func push(_ channel: RealtimeSubscriber, event: String, payload: RealtimeJSON) {
        let message = RealtimeOutboundMessage(joinRef: nil, ref: nil, topic: channel.topic, event: event, payload: payload)
        if !channel.outbox.enqueue(message.frame(for: channel.version)) { RealtimeMetrics.dropped(1) }
    }

    /// The same server push (null refs) to every channel of `topic`: the frame is encoded once per framing and shared.
    private func push(_ channels: [RealtimeSubscriber], topic: String, event: String, payload: RealtimeJSON) {
        let message = RealtimeOutboundMessage(joinRef: nil, ref: nil, topic: topic, event: event, payload: payload)
        var frames: [RealtimeVersion: RealtimeFrame] = [:]
        for channel in channels {
            let frame = frames[channel.version] ?? message.frame(for: channel.version)
            frames[channel.version] = frame
            if !channel.outbox.enqueue(frame) { RealtimeMetrics.dropped(1) }
        }
    }
}

extension CapturedChange {
    /// The image whose visibility decides delivery: the new row, or the old one of a DELETE.
    var decidingImage: String? { self.kind == .delete ? self.oldRecord : self.record }
}

/// The `data` object of a `postgres_changes` event for one identity (`RealtimePayload.postgresChangesData`).
enum RealtimeChangeEvent {
    /// INSERT carries `record`, UPDATE both, DELETE `old_record`. `deciding` is the deciding image with the role's
    /// hidden columns cut (nil: nothing to cut). The old row of an UPDATE is whole only when the subscriber could see
    /// it too; otherwise it is cut to the primary key (what Supabase sends by default).
    static func data(
        _ change: CapturedChange, table: RealtimeTable, columns: [RealtimeColumn], deciding: String?, oldVisible: Bool, oldImage: String?
    ) -> RealtimeJSON {
        let record = RealtimeJSON(unchecked: deciding ?? change.decidingImage ?? "{}")
        let row: RealtimeRowChange
        switch change.kind {
        case .update:
            let old = oldVisible ? (oldImage ?? change.oldRecord ?? "{}") : self.primaryKeyOnly(change.oldRecord, table)
            row = .update(record: record, oldRecord: RealtimeJSON(unchecked: old))
        case .delete:
            row = .delete(oldRecord: record)
        default:
            row = .insert(record: record)
        }
        return RealtimePayload.postgresChangesData(
            schema: table.schema, table: table.name, commitTimestamp: change.commitTimestamp, change: row, columns: columns)
    }

    private static func primaryKeyOnly(_ image: String?, _ table: RealtimeTable) -> String {
        guard let image, let members = (try? JSONValue.parse(image))?.objectValue else { return "{}" }
        return JSONValue.object(members.filter { table.primaryKey.contains($0.key) }).jsonText
    }
}
