import Foundation
import Logging

/// `LOG_FORMAT=json`: one JSON object per line on standard error, `{"time","level","label","message",…metadata}`, for
/// log collectors. Metadata values are strings (nested values flattened to their description), except `status` and
/// `duration_ms`, which are numbers when they parse as one.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    private static let lock = NSLock()
    private static let numeric: Set<String> = ["status", "duration_ms"]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: Any] = [
            "time": Self.timestamp(Date()), "level": "\(event.level)", "label": self.label, "message": "\(event.message)",
        ]
        var merged = self.metadata
        if let provided = self.metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        for (key, value) in merged {
            let text = "\(value)"
            object[key] = Self.numeric.contains(key) ? (Double(text).map { $0 as Any } ?? text) : text
        }
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        line.append(UInt8(ascii: "\n"))
        Self.lock.lock()
        defer { Self.lock.unlock() }
        FileHandle.standardError.write(line)
    }

    private static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
    }
}
