import Foundation
import Testing

@testable import GuestPassApp

/// Signed URLs' tokens: only this server's key, scope, object and time make one valid; each refusal is storage's
/// answer (`InvalidSignature`, or `InvalidJWT` for an expired one).
@Suite struct StorageSignerTests {
    let signer = StorageSigner(refreshTokenKey: Array(repeating: 7, count: 32))
    let app = UUID()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func token(scope: StorageSigner.Scope = .download, url: String = "photos/a/b.png", exp: Int = 1_800_000_060) throws -> String {
        try self.signer.token(.init(url: url, scope: scope, app: self.app, exp: exp))
    }

    func refusal(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as APIError {
            return error.code
        } catch {
            return "\(error)"
        }
    }

    @Test func aTokenOfThisServerForItsObjectAndScopeVerifies() throws {
        let claims = try self.signer.verify(try self.token(), scope: .download, url: "photos/a/b.png", now: self.now)
        #expect(claims.app == self.app && claims.exp == 1_800_000_060)
    }

    @Test func anotherObjectScopeKeyOrTamperedTokenIsRefused() throws {
        let token = try self.token()
        #expect(self.refusal { _ = try self.signer.verify(token, scope: .download, url: "photos/a/c.png", now: self.now) } == "InvalidSignature")
        #expect(self.refusal { _ = try self.signer.verify(token, scope: .upload, url: "photos/a/b.png", now: self.now) } == "InvalidSignature")
        let other = StorageSigner(refreshTokenKey: Array(repeating: 8, count: 32))
        #expect(self.refusal { _ = try other.verify(token, scope: .download, url: "photos/a/b.png", now: self.now) } == "InvalidSignature")
        // Flip one character of the claims: the MAC no longer matches.
        var tampered = Array(token)
        tampered[3] = tampered[3] == "A" ? "B" : "A"
        #expect(
            self.refusal { _ = try self.signer.verify(String(tampered), scope: .download, url: "photos/a/b.png", now: self.now) }
                == "InvalidSignature")
        for garbage in [nil, "", ".", "a.b.c", String(repeating: "x", count: 5000)] {
            #expect(
                self.refusal { _ = try self.signer.verify(garbage, scope: .download, url: "photos/a/b.png", now: self.now) } == "InvalidSignature")
        }
    }

    @Test func anExpiredTokenIsInvalidJWT() throws {
        let token = try self.token(exp: 1_800_000_000)
        #expect(self.refusal { _ = try self.signer.verify(token, scope: .download, url: "photos/a/b.png", now: self.now) } == "InvalidJWT")
    }
}
