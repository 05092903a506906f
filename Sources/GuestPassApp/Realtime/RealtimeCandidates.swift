import Foundation
import GuestPassJSON
import GuestPassStore
import RealtimeProtocol

/// One table's row changes of a poll, with an index that finds, for a binding, the changes its filter may pass
/// without looking at every change: what makes a poll's matching cost grow with the changes plus the subscribers,
/// not with their product (a burst of N changes to N subscribers of `user_id=eq.<me>` is N lookups, not N² tests).
///
/// The index is built per filter column on first use: each change's deciding image's value of the column, normalised
/// as `RealtimePrefilter` normalises it (`RealtimePrefilter.stored`), names a bucket; changes whose value is NULL
/// are in none (no `eq`/`in` is true for NULL), changes whose value the prefilter cannot decide (no image, no such
/// member, a type or spelling it leaves to PostgreSQL) are in every lookup's answer. A lookup is only a narrowing: every
/// candidate still goes through `RealtimePrefilter.mayMatch` and then PostgreSQL, so the index never decides a row,
/// it only skips rows `mayMatch` would have rejected. Not thread-safe: built and read by the dispatch's one task.
final class RealtimeTableChanges {
    let schema: String
    let name: String
    let table: RealtimeTable
    /// The table's row changes in `seq` order.
    let changes: [CapturedChange]
    /// Each change's deciding image, parsed (nil: none parsed, or no filter needs them).
    private let images: [[String: JSONValue]?]
    private var columns: [String: ColumnIndex] = [:]

    private struct BindingShape: Hashable {
        let kind: CapturedChange.Kind?
        let conditions: [RealtimeFilter.Condition]
    }

    private struct ColumnIndex {
        var buckets: [String: [Int]] = [:]
        var undecided: [Int] = []
    }

    /// - Parameter parseImages: whether some binding has a filter (else no image is parsed, and none is needed).
    init(schema: String, name: String, table: RealtimeTable, changes: [CapturedChange], parseImages: Bool) {
        self.schema = schema
        self.name = name
        self.table = table
        self.changes = changes
        self.images = changes.map { change in
            guard parseImages, let text = change.decidingImage else { return nil }
            return (try? JSONValue.parse(text))?.objectValue
        }
    }

    /// The indices (ascending) of the changes of `app` (or of no app) that some binding of `channels` on this table
    /// wants and whose filter may pass.
    /// Channels of one identity often bind the same way (a thousand sockets of one user): each distinct binding shape
    /// (kind and conditions) is looked up once.
    func candidates(for channels: [RealtimeSubscriber], app: UUID) -> [Int] {
        var shapes = Set<BindingShape>()
        for channel in channels {
            for binding in channel.bindings where binding.schema == self.schema && binding.table == self.name {
                shapes.insert(BindingShape(kind: binding.kind, conditions: binding.conditions))
            }
        }
        var picked: [Int] = []
        for shape in shapes {
            for index in self.lookup(shape.conditions) {
                let change = self.changes[index]
                guard change.appID == nil || change.appID == app, shape.kind == nil || shape.kind == change.kind else { continue }
                if shape.conditions.isEmpty || RealtimePrefilter.mayMatch(shape.conditions, image: self.images[index], table: self.table) {
                    picked.append(index)
                }
            }
        }
        guard picked.count > 1 else { return picked }
        picked.sort()
        var unique: [Int] = [picked[0]]
        for index in picked.dropFirst() where index != unique[unique.count - 1] { unique.append(index) }
        return unique
    }

    /// The changes `conditions` may pass, as far as the index of one decidable condition tells (all changes when
    /// none is decidable), ascending.
    private func lookup(_ conditions: [RealtimeFilter.Condition]) -> [Int] {
        for condition in conditions where !condition.negated && (condition.op == .eq || condition.op == .in) {
            guard let type = self.table.column(condition.column)?.type,
                let wanted = RealtimePrefilter.wanted(type: type, values: condition.values)
            else { continue }
            let index = self.index(of: condition.column, type: type)
            var found = index.undecided
            for key in Set(wanted) { found += index.buckets[key] ?? [] }
            found.sort()
            return found
        }
        return Array(self.changes.indices)
    }

    private func index(of column: String, type: String) -> ColumnIndex {
        if let built = self.columns[column] { return built }
        var index = ColumnIndex()
        for (position, image) in self.images.enumerated() {
            guard let image, let value = image[column] else {
                index.undecided.append(position)
                continue
            }
            switch RealtimePrefilter.stored(type: type, json: value) {
            case .never: break
            case .key(let key): index.buckets[key, default: []].append(position)
            case .unknown: index.undecided.append(position)
            }
        }
        self.columns[column] = index
        return index
    }
}
