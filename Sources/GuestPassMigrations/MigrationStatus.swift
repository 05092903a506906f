public import Foundation

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
        /// A repeatable file that was applied but no longer exists: its objects stay (a versioned file drops them);
        /// the next `up` forgets the record.
        case removed
    }

    public let scope: MigrationScope
    public let kind: MigrationKind
    /// The version of a versioned file; `R` for a repeatable one.
    public let version: String
    public let name: String
    /// The file's checksum, or the recorded one when the file is missing.
    public let checksum: String
    public let state: State
    public let appliedAt: Date?
    public let durationMilliseconds: Int?

    public init(
        scope: MigrationScope, kind: MigrationKind = .versioned, version: String, name: String, checksum: String, state: State,
        appliedAt: Date?, durationMilliseconds: Int?
    ) {
        self.scope = scope
        self.kind = kind
        self.version = version
        self.name = name
        self.checksum = checksum
        self.state = state
        self.appliedAt = appliedAt
        self.durationMilliseconds = durationMilliseconds
    }

    /// Whether this line needs an operator's attention: a versioned file that changed, is missing or failed. A
    /// repeatable file never does: a changed one is what the next `up` applies.
    public var needsAttention: Bool { self.kind == .versioned && [.changed, .missing, .failed].contains(self.state) }

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

    /// The repeatable files: `applied` (the recorded checksum matches), `changed` (it differs: the next `up` applies
    /// the file again), `pending` (never applied), `removed` (recorded, no file), `recorded` (app scope, no `--dir`).
    static func compareRepeatable(
        files: [MigrationFile]?, scope: MigrationScope, recorded all: [History.Key: History.Entry]
    ) -> [MigrationStatus] {
        let recorded = all.filter { $0.key.scope == scope.rawValue }
        var rows: [MigrationStatus] = []
        for file in files ?? [] {
            let entry = recorded[History.Key(scope: scope.rawValue, version: file.name)]
            let state: State = entry.map { $0.success && $0.checksum == file.checksum ? .applied : .changed } ?? .pending
            rows.append(
                .init(
                    scope: scope, kind: .repeatable, version: "R", name: file.name, checksum: file.checksum, state: state,
                    appliedAt: entry?.appliedAt, durationMilliseconds: entry?.durationMilliseconds))
        }
        let names = Set((files ?? []).map(\.name))
        for (key, entry) in recorded.sorted(by: { $0.key.version < $1.key.version }) where !names.contains(key.version) {
            rows.append(
                .init(
                    scope: scope, kind: .repeatable, version: "R", name: entry.name, checksum: entry.checksum,
                    state: files == nil ? .recorded : .removed, appliedAt: entry.appliedAt, durationMilliseconds: entry.durationMilliseconds))
        }
        return rows
    }
}
