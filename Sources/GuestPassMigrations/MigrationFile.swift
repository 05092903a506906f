import Foundation
import GuestPassCrypto

/// Where a migration comes from: the core set embedded in the binary, or an app's own folder (`--dir`).
public enum MigrationScope: String, Sendable, CaseIterable {
    case core
    case app
}

/// One migration file: `NNNN_verb_object.sql`.
public struct MigrationFile: Sendable, Equatable {
    public let scope: MigrationScope
    /// The numeric prefix, as written (`0001`).
    public let version: String
    /// The rest of the file name without `.sql` (`create_roles`).
    public let name: String
    public let sql: String
    /// `sha256:<hex>` over the file's bytes with a UTF-8 BOM stripped and CRLF normalised to LF.
    public let checksum: String
    /// False when the leading comment block holds `-- migrate:no-transaction`.
    public let transactional: Bool

    public init(scope: MigrationScope, version: String, name: String, contents: Data) {
        var bytes = [UInt8](contents)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        let text = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
        self.scope = scope
        self.version = version
        self.name = name
        self.sql = text
        self.checksum = "sha256:" + Digest.sha256Hex(text)
        let leadingComments = text.split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { $0.hasPrefix("--") || $0.trimmingCharacters(in: .whitespaces).isEmpty }
        self.transactional = !leadingComments.contains { $0.trimmingCharacters(in: .whitespaces) == "-- migrate:no-transaction" }
    }

    /// The numeric value of `version`, for ordering.
    var order: Int { Int(self.version) ?? Int.max }

    /// Loads every `NNNN_name.sql` file of `directory`, sorted by version. Other files are ignored.
    public static func load(from directory: URL, scope: MigrationScope) throws -> [MigrationFile] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw MigrationError("cannot read migrations folder \(directory.path): \(error.localizedDescription)")
        }
        var files: [MigrationFile] = []
        for fileName in names where fileName.hasSuffix(".sql") {
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

/// A migration problem, with a message meant for the operator.
public struct MigrationError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
