import Foundation
import GuestPassCrypto
import GuestPassJSON
import GuestPassStore
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import GuestPassApp

/// The email area's server-side pieces that need no database: the password pool's bound, the codes and their sealing,
/// the address and password checks. The flows themselves are proven end to end (e2e/test_email_*.py, pgTAP 35_email).
@Suite struct EmailTests {
    // MARK: The password pool

    /// A flood of password checks never runs more hashes at once than the pool has threads, queues at most
    /// `maxWaiting` more, and refuses the rest at once with 503 and Retry-After (nothing was written: safe to retry).
    @Test func aFloodOfHashesIsBoundedAndTheRestRefusedAtOnce() async throws {
        let hasher = PasswordHasher(threads: 1, maxWaiting: 3)
        let outcomes = NIOLockedValueBox((hashed: 0, refused: 0, other: 0))
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<24 {
                group.addTask {
                    do {
                        _ = try await hasher.hash("password \(index)")
                        outcomes.withLockedValue { $0.hashed += 1 }
                    } catch let error as APIError where error.status == .serviceUnavailable && error.headers[.retryAfter] == "1" {
                        outcomes.withLockedValue { $0.refused += 1 }
                    } catch {
                        outcomes.withLockedValue { $0.other += 1 }
                    }
                }
            }
        }
        let final = outcomes.withLockedValue { $0 }
        #expect(final.other == 0)
        #expect(final.hashed + final.refused == 24)
        #expect(final.refused > 0, "24 hashes at once on one thread with 3 waiting places: some must be refused")
        #expect(final.hashed >= 4, "one running and three waiting are admitted")
    }

    @Test func verificationMatchesOnlyTheRightPassword() async throws {
        let hasher = PasswordHasher(threads: 1, maxWaiting: 4)
        let stored = try await hasher.hash("correct horse")
        #expect(stored.hasPrefix("$scrypt$"))
        #expect(try await hasher.verify("correct horse", against: stored).isMatch)
        #expect(try await !hasher.verify("correct horsE", against: stored).isMatch)
    }

    // MARK: Codes

    @Test func aCodeHashesAsTheDatabaseKeepsItAndItsPayloadOpensForItsAppOnly() throws {
        let issuer = EmailCodeIssuer(refreshTokenKey: Array(repeating: 7, count: 32))
        let app = UUID()
        let mail = try issuer.issue(length: 8, app: app)
        let opened = try #require(issuer.open(mail.payload, app: app))
        #expect(opened.code.count == 8 && opened.code.allSatisfy(\.isNumber))
        #expect(issuer.codeHash(opened.code, app: app) == mail.codeHash)
        #expect(EmailCodeIssuer.linkHash(opened.link) == mail.linkHash)
        #expect(issuer.codeHash(opened.code, app: UUID()) != mail.codeHash, "a code of another app hashes otherwise")
        #expect(issuer.open(mail.payload, app: UUID()) == nil, "the payload is bound to its app")
        let otherKey = EmailCodeIssuer(refreshTokenKey: Array(repeating: 8, count: 32))
        #expect(otherKey.open(mail.payload, app: app) == nil)
        #expect(otherKey.codeHash(opened.code, app: app) != mail.codeHash, "the hash is keyed: a table alone gives nothing")
        #expect(!mail.payload.contains(subsequence: Array(opened.code.utf8)), "no code in the clear in the outbox")
    }

    @Test func anSMTPPasswordIsSealedForItsApp() throws {
        let sealer = SMTPPasswordSealer(refreshTokenKey: Array(repeating: 9, count: 32))
        let app = UUID()
        let box = try sealer.seal("relay secret", app: app)
        #expect(sealer.open(box, app: app) == "relay secret")
        #expect(sealer.open(box, app: UUID()) == nil)
        #expect(!box.contains(subsequence: Array("relay secret".utf8)))
    }

    // MARK: Input

    @Test(arguments: [
        ("ann@example.com", true), ("a.b+c@sub.example.co.uk", true), ("x@y.z", true), ("ann@example", false),
        ("ann example@example.com", false), ("@example.com", false), ("ann@", false), ("ann@@example.com", false),
        ("ann@-example.com", false), ("ann@example-.com", false), ("<ann>@example.com", false), ("ann@exa_mple.com", false),
        ("ann@example..com", false), ("\u{0}@example.com", false), (String(repeating: "a", count: 65) + "@example.com", false),
        ("a@" + String(repeating: "b", count: 250) + ".com", false),
    ])
    func addressesAreCheckedAsTheSQLChecksThem(address: String, valid: Bool) {
        #expect(EmailInput.isAddress(address) == valid)
    }

    @Test func aWeakPasswordNamesEveryReason() throws {
        let settings = EmailSettings(
            enabled: true, autoconfirm: false, otpLength: 6, passwordMinLength: 10,
            passwordRequiredCharacters: ["0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"])
        do {
            try EmailInput.checkStrength("short", settings)
            Issue.record("a short password without digits or capitals passed")
        } catch let error as APIError {
            #expect(error.code == GoTrueCode.weakPassword && error.status == .unprocessableContent)
            #expect(error.weakPasswordReasons == ["length", "characters"])
        }
        try EmailInput.checkStrength("Long enough 1", settings)
        #expect(throws: APIError.self) { try EmailInput.password(["password": .string(String(repeating: "x", count: 73))]) }
    }
}

extension Array where Element == UInt8 {
    fileprivate func contains(subsequence: [UInt8]) -> Bool {
        guard subsequence.count <= self.count else { return false }
        return (0...(self.count - subsequence.count)).contains { Array(self[$0..<$0 + subsequence.count]) == subsequence }
    }
}
