import CoreMigrations
public import Foundation
import GuestPassCrypto

/// Where a migration comes from: the core set embedded in the binary, or an app's own folder (`--dir`).
public enum MigrationScope: String, Sendable, CaseIterable {
    case core
    case app
}

/// Which of the two kinds of migration file (Flyway's split).
public enum MigrationKind: String, Sendable {
    /// `NNNN_name.sql`: tables, types, data changes. Applied once, in version order; never edited once released.
    case versioned
    /// `repeatable/<name>.sql`: functions, triggers, policies, grants (`create or replace`, idempotent). Re-applied
    /// whenever its checksum differs from the recorded one, after the versioned files of its scope, in file-name order.
    case repeatable
}

/// One migration file: `NNNN_verb_object.sql` (versioned) or `repeatable/<name>.sql` (repeatable).
public struct MigrationFile: Sendable, Equatable {
    public let scope: MigrationScope
    public let kind: MigrationKind
    /// The numeric prefix, as written (`0001`); `R` for a repeatable file.
    public let version: String
    /// The rest of the file name without `.sql` (`create_roles`); a repeatable file's whole name without `.sql`.
    public let name: String
    public let sql: String
    /// `sha256:<hex>` over the file's bytes with a UTF-8 BOM stripped and CRLF normalised to LF.
    public let checksum: String
    /// False when the leading comment block holds `-- migrate:no-transaction`.
    public let transactional: Bool

    public init(scope: MigrationScope, kind: MigrationKind = .versioned, version: String, name: String, contents: Data) {
        var bytes = [UInt8](contents)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        let text = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
        self.scope = scope
        self.kind = kind
        self.version = version
        self.name = name
        self.sql = text
        self.checksum = "sha256:" + Digest.sha256Hex(text)
        let leadingComments = text.split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { $0.hasPrefix("--") || $0.trimmingCharacters(in: .whitespaces).isEmpty }
        self.transactional = !leadingComments.contains { $0.trimmingCharacters(in: .whitespaces) == "-- migrate:no-transaction" }
    }

    /// The path of the file inside its folder, as messages name it (`0001_create_roles.sql`, `repeatable/auth.sql`).
    public var fileName: String {
        switch self.kind {
        case .versioned: "\(self.version)_\(self.name).sql"
        case .repeatable: "\(MigrationSet.repeatableFolder)/\(self.name).sql"
        }
    }

    /// The numeric value of `version`, for ordering.
    var order: Int { Int(self.version) ?? Int.max }

    /// Loads every `NNNN_name.sql` file of `directory`, sorted by version. Other files (and folders) are ignored.
    public static func load(from directory: URL, scope: MigrationScope) throws -> [MigrationFile] {
        var files: [MigrationFile] = []
        for fileName in try sqlFileNames(in: directory, "migrations") {
            let stem = fileName.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"),
                !stem[..<underscore].isEmpty, stem[..<underscore].allSatisfy(\.isNumber),
                !stem[stem.index(after: underscore)...].isEmpty
            else {
                throw MigrationError("\(fileName): migration files are named NNNN_verb_object.sql")
            }
            let contents = try Data(contentsOf: directory.appendingPathComponent(fileName))
            files.append(
                MigrationFile(
                    scope: scope, version: String(stem[..<underscore]), name: String(stem[stem.index(after: underscore)...]),
                    contents: contents
                )
            )
        }
        files.sort { $0.order < $1.order }
        for (previous, next) in zip(files, files.dropFirst()) where previous.order == next.order {
            throw MigrationError("two migrations share version \(next.version) in \(directory.path)")
        }
        return files
    }
}

/// A folder's migrations: its versioned `NNNN_name.sql` files and the repeatable files of its `repeatable/` subfolder.
public struct MigrationSet: Sendable, Equatable {
    /// The subfolder that holds a folder's repeatable files.
    public static let repeatableFolder = "repeatable"

    /// In version order.
    public var versioned: [MigrationFile]
    /// In file-name order.
    public var repeatable: [MigrationFile]

    public init(versioned: [MigrationFile], repeatable: [MigrationFile] = []) {
        self.versioned = versioned
        self.repeatable = repeatable
    }

    /// Every file: the versioned ones, then the repeatable ones.
    public var all: [MigrationFile] { self.versioned + self.repeatable }

    /// Loads `directory`: its `NNNN_name.sql` files and, when `directory/repeatable` exists, every `.sql` file in it.
    public static func load(from directory: URL, scope: MigrationScope) throws -> MigrationSet {
        let versioned = try MigrationFile.load(from: directory, scope: scope)
        let folder = directory.appendingPathComponent(Self.repeatableFolder, isDirectory: true)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return MigrationSet(versioned: versioned)
        }
        var repeatable: [MigrationFile] = []
        for fileName in try sqlFileNames(in: folder, "repeatable").sorted() {
            let name = String(fileName.dropLast(4))
            guard !name.isEmpty, !name.contains(where: \.isWhitespace) else {
                throw MigrationError("\(Self.repeatableFolder)/\(fileName): repeatable files are named <name>.sql, without spaces")
            }
            let contents = try Data(contentsOf: folder.appendingPathComponent(fileName))
            repeatable.append(MigrationFile(scope: scope, kind: .repeatable, version: "R", name: name, contents: contents))
        }
        return MigrationSet(versioned: versioned, repeatable: repeatable)
    }

    /// The core set embedded in the binary (`sql/migrations` and `sql/migrations/repeatable`).
    public static func core() throws -> MigrationSet {
        try Self.load(from: CoreMigrations.directory, scope: .core)
    }
}

/// A migration problem, with a message meant for the operator.
public struct MigrationError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The names of the `.sql` files in `folder`, in no particular order; `kind` names the folder in the error thrown when
/// it cannot be read ("cannot read migrations folder …").
private func sqlFileNames(in folder: URL, _ kind: String) throws -> [String] {
    do {
        return try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }
    } catch {
        throw MigrationError("cannot read \(kind) folder \(folder.path): \(error.localizedDescription)")
    }
}
