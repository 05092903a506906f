import Foundation
import Testing

@testable import GuestPassApp

/// The body limits the README documents are the ones the routes enforce: both read `BodyLimits`, and this compares
/// the README's sentences with it (`e2e/test_request_bodies.py` sends limit + 1 bytes to every route).
@Suite struct BodyLimitsTests {
    static let readme: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
    }()

    /// `32 * 1024` as the README writes it: "32 KiB"; `1024 * 1024`: "1 MiB".
    static func written(_ bytes: Int) -> String {
        bytes % (1024 * 1024) == 0 ? "\(bytes / (1024 * 1024)) MiB" : "\(bytes / 1024) KiB"
    }

    /// The README's paragraph that starts with `start`, up to the next blank line, on one line.
    static func paragraph(startingWith start: String) throws -> String {
        let range = try #require(Self.readme.range(of: start), "the README has no paragraph starting \(start)")
        let rest = Self.readme[range.lowerBound...]
        let end = rest.range(of: "\n\n")?.lowerBound ?? rest.endIndex
        return rest[..<end].replacingOccurrences(of: "\n", with: " ")
    }

    @Test func theAPISentenceNamesEveryJSONRouteLimit() throws {
        let sentence = try Self.paragraph(startingWith: "Request bodies are one JSON object")
        let expected = [
            "\(Self.written(BodyLimits.signUp)) for sign-up and `PUT /auth/v1/user`",
            "\(Self.written(BodyLimits.token)) for tokens (both grants) and the merge",
            "\(Self.written(BodyLimits.welcomeGrant)) for the welcome grant",
            "\(Self.written(BodyLimits.rpc)) for RPC",
        ]
        for phrase in expected {
            #expect(sentence.contains(phrase), "README: expected “\(phrase)” in: \(sentence.prefix(400))")
        }
    }

    @Test func theTableSectionNamesTheWriteLimit() throws {
        let limits = try Self.paragraph(startingWith: "- **Limits**: at most `GUESTPASS_DB_MAX_ROWS`")
        #expect(limits.contains("a write body over \(Self.written(BodyLimits.tableWrite)) is 413"), "README: \(limits)")
    }

    @Test func theLimitsAreTheIssuedOnes() {
        // The documents promise these; a change here is a change of the API (README, e2e/test_request_bodies.py).
        #expect(BodyLimits.signUp == 32 * 1024)
        #expect(BodyLimits.token == 4 * 1024)
        #expect(BodyLimits.welcomeGrant == 8 * 1024)
        #expect(BodyLimits.rpc == 1024 * 1024)
        #expect(BodyLimits.tableWrite == 1024 * 1024)
    }
}
