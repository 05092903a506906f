import Foundation
import GuestPassPostgres
import GuestPassStore
import RealtimeProtocol

/// One table's changes of a poll that one subscriber identity's channels may receive (the candidates
/// `RealtimeTableChanges` found), with the question `RealtimeVisibility` answers for them, and how the answer becomes
/// their events. Channels with the same identity and app share one: `RealtimeSubscriber.identityKey` says they see
/// exactly the same rows.
struct RealtimeGroupCheck: Sendable {
    let table: RealtimeTable
    /// The group's channels: one identity, one app.
    let channels: [RealtimeSubscriber]
    /// The candidate changes, in `seq` order.
    let changes: [CapturedChange]
    /// The distinct condition lists of the channels' bindings on the table (the check's filters), and where each is.
    private let filters: [[RealtimeFilter.Condition]]
    private let filterIndex: [[RealtimeFilter.Condition]: Int]

    init(table: RealtimeTable, channels: [RealtimeSubscriber], changes: [CapturedChange]) {
        self.table = table
        self.channels = channels
        self.changes = changes
        var filterIndex: [[RealtimeFilter.Condition]: Int] = [:]
        var filters: [[RealtimeFilter.Condition]] = []
        for channel in channels {
            for binding in channel.bindings where binding.schema == table.schema && binding.table == table.name {
                guard filterIndex[binding.conditions] == nil else { continue }
                filterIndex[binding.conditions] = filters.count
                filters.append(binding.conditions)
            }
        }
        self.filters = filters
        self.filterIndex = filterIndex
    }

    var identity: RequestIdentity { self.channels[0].identity }

    /// The check: image 2i is what decides (the new row, or the old one of a DELETE); 2i+1 the old row of an UPDATE.
    var request: RealtimeCheck {
        var images: [String] = []
        images.reserveCapacity(2 * self.changes.count)
        for change in self.changes {
            images.append(change.decidingImage ?? "{}")
            images.append(change.kind == .update ? change.oldRecord ?? "{}" : "{}")
        }
        return RealtimeCheck(identity: self.identity, images: images, filters: self.filters)
    }

    /// Each visible change's event, with the ids of the bindings of each channel it passes, in `seq` order.
    func events(_ verdicts: RealtimeVerdicts, _ send: (RealtimeSubscriber, RealtimeJSON) -> Void) {
        let columns = self.table.columns.filter(\.selectable).map { RealtimeColumn(name: $0.name, type: $0.type) }
        for (index, change) in self.changes.enumerated() where verdicts.visible[2 * index] {
            var data: RealtimeJSON?
            for channel in self.channels {
                var ids: [Int] = []
                for binding in channel.bindings
                where binding.wants(change) && verdicts.matches[2 * index][self.filterIndex[binding.conditions]!] && !ids.contains(binding.id) {
                    ids.append(binding.id)
                }
                guard !ids.isEmpty else { continue }
                if data == nil {
                    data = RealtimeChangeEvent.data(
                        change, table: self.table, columns: columns, deciding: verdicts.trimmedImages[2 * index],
                        oldVisible: verdicts.visible[2 * index + 1], oldImage: verdicts.trimmedImages[2 * index + 1])
                }
                send(channel, RealtimePayload.postgresChanges(ids: ids, data: data!))
            }
        }
    }
}

extension RealtimeGroupCheck {
    /// Checks a batch of groups of one table and role in one transaction (`RealtimeVisibility.check(pool:table:batch:)`);
    /// when that fails (a policy that raises for one identity, the batch's timeout), each group is checked again on its
    /// own, so that a failure costs only the identity it belongs to.
    static func verdicts(of batch: [RealtimeGroupCheck], pool: PostgresPool) async -> [Result<RealtimeVerdicts, any Error>] {
        guard let table = batch.first?.table else { return [] }
        do {
            return try await RealtimeVisibility.check(pool: pool, table: table, batch: batch.map(\.request)).map { .success($0) }
        } catch {
            guard batch.count > 1 else { return [.failure(error)] }
            var answers: [Result<RealtimeVerdicts, any Error>] = []
            for group in batch {
                let request = group.request
                do {
                    answers.append(
                        .success(
                            try await RealtimeVisibility.check(
                                pool: pool, identity: request.identity, table: table, images: request.images, filters: request.filters)))
                } catch {
                    answers.append(.failure(error))
                }
            }
            return answers
        }
    }
}
