import ArgumentParser
import Foundation
import GuestPassApp
import GuestPassObjectStore
import GuestPassStore

/// `guestpass prune`: removes stale guests that hold nothing and spent bookkeeping rows, in short batches
/// (`guestpass.prune_batch`), safe to run from cron on several replicas at once.
struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract:
            "Remove stale guests (idle past the app's guest_idle_days, holding nothing) and spent sessions, tokens, idempotency records, rate-limit rows and codes, and storage bytes no object references (given the server's storage settings)."
    )

    @OptionGroup var database: DatabaseOptions
    @Flag(help: "Count what would go, remove nothing (guests: the first batch of candidates).") var dryRun = false
    @Flag(help: "Print the counts as JSON.") var json = false
    @Option(help: "Rows per transaction.") var batchSize = 500
    @Option(help: "The exposed schemas whose rows keep a guest (default: $GUESTPASS_DB_SCHEMAS or public).") var schemas: String?

    func validate() throws {
        guard (1...100_000).contains(self.batchSize) else { throw ValidationError("--batch-size must be 1 to 100000") }
    }

    func run() async throws {
        let schemas = try AppConfiguration.exposedSchemas(self.schemas ?? ProcessInfo.processInfo.environment["GUESTPASS_DB_SCHEMAS"])
        let (dryRun, batchSize) = (self.dryRun, self.batchSize)
        let showProgress = isatty(STDERR_FILENO) == 1 && !self.json
        let counts: [(String, Int)] = try await withAdminPool(self.database) { pool in
            let administration = Administration(pool: pool)
            var counts: [(String, Int)] = []
            for kind in Administration.pruneKinds {
                var total = 0
                var cursor: Administration.PruneCursor? = .start
                while let after = cursor {
                    let batch = try await administration.pruneBatch(kind, limit: batchSize, dryRun: dryRun, schemas: schemas, after: after)
                    total += batch.removed
                    cursor = dryRun ? nil : batch.next
                    if showProgress { FileHandle.standardError.write(Data("\rprune: \(kind) \(total)\u{1B}[K".utf8)) }
                }
                counts.append((kind, total))
            }
            if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            // Storage: bytes of replaced and removed versions, and of uploads that never wrote their row (past the
            // grace period), when this environment names a backend (GUESTPASS_STORAGE_DIR or the S3 settings).
            if let backend = try StorageConfiguration(environment: ProcessInfo.processInfo.environment).makeBackend() {
                let swept: Int
                do {
                    swept = dryRun ? 0 : try await StorageSweep(pool: pool, backend: backend).sweepAll(uploads: true)
                } catch {
                    try? await backend.shutdown()
                    throw error
                }
                try? await backend.shutdown()
                counts.append(("storage_bytes", swept))
            }
            return counts
        }
        if self.json {
            let object: [String: Any] = ["dry_run": dryRun, "removed": Dictionary(uniqueKeysWithValues: counts)]
            print(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self))
        } else {
            for (kind, count) in counts { print("\(kind.padding(toLength: 20, withPad: " ", startingAt: 0)) \(count)\(dryRun ? " (dry run)" : "")") }
        }
    }
}
