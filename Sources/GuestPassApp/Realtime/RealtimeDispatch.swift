import Foundation
import GuestPassJSON
import GuestPassPostgres
import GuestPassStore
import Logging
import RealtimeProtocol

/// Delivers one poll's worth of the change log to this process's channels.
///
/// Row changes are grouped by table, then the channels bound to that table by identity (role and verified claims):
/// one `RealtimeVisibility` check per group decides, on the captured images, which changes each identity may see
/// and which filters they pass, and the group's channels get their events in `seq` order. Groups run concurrently
/// (at most `concurrentChecks` at a time, so REST keeps most of the pool); a group whose check fails (a policy that
/// raises, a timeout) costs only its own channels the batch, which they are told with a `system` error, never the
/// others (Supabase's realtime#2093). A row change whose table has an `app_id` column goes only to channels of that
/// app, whatever the policies say: the tenant boundary is not left to policy authors.
struct RealtimeDispatch: Sendable {
    let services: RealtimeServices
    let logger: Logger
    var concurrentChecks = 4

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
        var work: [(changes: [CapturedChange], channels: [RealtimeSubscriber])] = []
        var order: [String] = []
        var byTable: [String: [CapturedChange]] = [:]
        for change in rowChanges {
            let key = (change.schema ?? "") + "." + (change.table ?? "")
            if byTable[key] == nil { order.append(key) }
            byTable[key, default: []].append(change)
        }
        for key in order {
            let tableChanges = byTable[key]!
            let interested = subscribers.filter { channel in channel.bindings.contains { binding in tableChanges.contains(where: binding.wants) } }
            var groups: [String: [RealtimeSubscriber]] = [:]
            for channel in interested { groups[channel.identityKey + "\u{0}" + channel.appID.uuidString, default: []].append(channel) }
            for group in groups.values { work.append((tableChanges, group)) }
        }
        let anyFilter = work.contains { item in item.channels.contains { $0.bindings.contains { !$0.conditions.isEmpty } } }
        let images = ParsedImages(anyFilter ? rowChanges : [])
        await withTaskGroup(of: Void.self) { tasks in
            var running = 0
            for item in work {
                if running == self.concurrentChecks {
                    await tasks.next()
                    running -= 1
                }
                tasks.addTask { await self.deliver(item.changes, images: images, to: item.channels) }
                running += 1
            }
        }
    }

    /// Checks and delivers one table's changes to one identity's channels.
    private func deliver(_ tableChanges: [CapturedChange], images: ParsedImages, to channels: [RealtimeSubscriber]) async {
        let first = channels[0]
        guard let schema = tableChanges[0].schema, let name = tableChanges[0].table else { return }
        let table: RealtimeTable
        do {
            guard let found = try await self.services.tables.table(schema: schema, name: name, role: first.identity.role) else { return }
            table = found
        } catch {
            return self.refuse(tableChanges.count, to: channels, schema: schema, name: name, error: error)
        }
        // Only changes of the identity's app that some binding wants and whose filter may pass are checked.
        let relevant = tableChanges.filter { change in
            guard change.appID == nil || change.appID == first.appID else { return false }
            return channels.contains { channel in
                channel.bindings.contains { binding in
                    binding.wants(change)
                        && (binding.conditions.isEmpty
                            || RealtimePrefilter.mayMatch(binding.conditions, image: images.members(of: change), table: table))
                }
            }
        }
        guard !relevant.isEmpty else { return }
        var filterIndex: [[RealtimeFilter.Condition]: Int] = [:]
        var filters: [[RealtimeFilter.Condition]] = []
        let tableBindings = channels.flatMap(\.bindings).filter { $0.schema == schema && $0.table == name }
        for binding in tableBindings where filterIndex[binding.conditions] == nil {
            filterIndex[binding.conditions] = filters.count
            filters.append(binding.conditions)
        }
        // Image 2i is what decides (the new row, or the old one of a DELETE); 2i+1 the old row of an UPDATE.
        var checked: [String] = []
        for change in relevant {
            checked.append(change.decidingImage ?? "{}")
            checked.append(change.kind == .update ? change.oldRecord ?? "{}" : "{}")
        }
        let verdicts: RealtimeVerdicts
        do {
            verdicts = try await RealtimeVisibility.check(
                pool: self.services.pool, identity: first.identity, table: table, images: checked, filters: filters)
        } catch {
            return self.refuse(relevant.count, to: channels, schema: schema, name: name, error: error)
        }
        let columns = table.columns.filter(\.selectable).map { RealtimeColumn(name: $0.name, type: $0.type) }
        for (index, change) in relevant.enumerated() where verdicts.visible[2 * index] {
            var data: RealtimeJSON?
            for channel in channels {
                var ids: [Int] = []
                for binding in channel.bindings
                where binding.wants(change) && verdicts.matches[2 * index][filterIndex[binding.conditions]!] && !ids.contains(binding.id) {
                    ids.append(binding.id)
                }
                guard !ids.isEmpty else { continue }
                if data == nil {
                    data = RealtimeChangeEvent.data(
                        change, table: table, columns: columns, deciding: verdicts.trimmedImages[2 * index],
                        oldVisible: verdicts.visible[2 * index + 1], oldImage: verdicts.trimmedImages[2 * index + 1])
                }
                self.push(channel, event: "postgres_changes", payload: RealtimePayload.postgresChanges(ids: ids, data: data!))
                RealtimeMetrics.delivered()
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

/// The deciding row image of each change of a poll, parsed once for `RealtimePrefilter` (shared by every identity).
struct ParsedImages: Sendable {
    private let members: [Int64: [String: JSONValue]]

    init(_ changes: [CapturedChange]) {
        var members: [Int64: [String: JSONValue]] = [:]
        for change in changes {
            if let text = change.decidingImage, let object = (try? JSONValue.parse(text))?.objectValue { members[change.seq] = object }
        }
        self.members = members
    }

    func members(of change: CapturedChange) -> [String: JSONValue]? { self.members[change.seq] }
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
