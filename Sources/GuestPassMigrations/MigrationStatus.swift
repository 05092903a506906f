import Foundation

/// One line of `guestpass migrate status`.
public struct MigrationStatus: Sendable, Equatable {
    public enum State: String, Sendable {
        /// Applied, and the file still matches.
        case applied
        /// Not applied yet.
        case pending
        /// Applied, but the file changed since.
        case changed
        /// Recorded as applied, but no file has its version.
        case missing
        /// A non-transactional file that failed part-way.
        case failed
        /// Recorded for the app scope, but no `--dir` was given to compare with.
        case recorded
    }

    public let scope: MigrationScope
    public let version: String
    public let name: String
    /// The file's checksum, or the recorded one when the file is missing.
    public let checksum: String
    public let state: State
    public let appliedAt: Date?
    public let durationMilliseconds: Int?

    /// Whether this line needs an operator's attention.
    public var needsAttention: Bool { [.changed, .missing, .failed].contains(self.state) }

    static func compare(files: [MigrationFile]?, scope: MigrationScope, history: [History.Key: History.Entry]) -> [MigrationStatus] {
        var rows: [MigrationStatus] = []
        let recorded = history.filter { $0.key.scope == scope.rawValue }
        for file in files ?? [] {
            let key = History.Key(scope: scope.rawValue, version: file.version)
            guard let entry = recorded[key] else {
                rows.append(
                    .init(
                        scope: scope, version: file.version, name: file.name, checksum: file.checksum, state: .pending, appliedAt: nil,
                        durationMilliseconds: nil))
                continue
            }
            let state: State = !entry.success ? .failed : entry.checksum == file.checksum ? .applied : .changed
            rows.append(
                .init(
                    scope: scope, version: file.version, name: file.name, checksum: file.checksum, state: state, appliedAt: entry.appliedAt,
                    durationMilliseconds: entry.durationMilliseconds))
        }
        let fileVersions = Set((files ?? []).map(\.version))
        for (key, entry) in recorded where !fileVersions.contains(key.version) {
            rows.append(
                .init(
                    scope: scope, version: key.version, name: entry.name, checksum: entry.checksum, state: files == nil ? .recorded : .missing,
                    appliedAt: entry.appliedAt, durationMilliseconds: entry.durationMilliseconds))
        }
        return rows.sorted { (Int($0.version) ?? .max, $0.version) < (Int($1.version) ?? .max, $1.version) }
    }
}
