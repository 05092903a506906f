import Foundation
import Hummingbird
import NIOCore

/// A console form post (`application/x-www-form-urlencoded`, at most `maxBytes`): names to values, the first of a
/// repeated name kept. Anything else — another content type, a bigger body, text that is not UTF-8 once
/// percent-decoded — is `nil`, which the routes answer with a 400 page.
struct ConsoleForm: Sendable {
    static let maxBytes = 16 * 1024
    let fields: [String: String]

    subscript(_ name: String) -> String? { self.fields[name] }

    /// The form of `request`, or nil when it is not a well-formed one.
    static func read(_ request: Request) async -> ConsoleForm? {
        let type = request.headers[.contentType]?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard type == "application/x-www-form-urlencoded" else { return nil }
        guard let buffer = try? await request.body.collect(upTo: Self.maxBytes) else { return nil }
        return Self.parse(String(buffer: buffer))
    }

    /// `text` as a form, or nil when a part does not percent-decode to UTF-8.
    static func parse(_ text: String) -> ConsoleForm? {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), let value = Self.decode(parts.count > 1 ? parts[1] : "") else { return nil }
            if fields[name] == nil { fields[name] = value }
        }
        return ConsoleForm(fields: fields)
    }

    private static func decode(_ part: Substring) -> String? {
        String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
