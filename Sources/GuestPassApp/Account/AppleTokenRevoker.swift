import Foundation
import GuestPassApple
import GuestPassCrypto
import GuestPassPostgres
import GuestPassStore
import Logging

/// Revokes at Apple the Apple refresh tokens a deleted account held: the one step after a deletion, whoever deleted it
/// (the user, `AccountRoutes.delete`; an operator, the console). The app's Sign in with Apple key is read only when
/// there is a token to revoke (most deletions have none); a token that does not open under this server's key, or a
/// revocation Apple refuses or that cannot reach Apple, is logged and skipped (the account stays deleted).
struct AppleTokenRevoker: Sendable {
    let functions: ServerFunctions
    let apple: AppleVerifiers
    let signer: JWTSigner

    /// The number of tokens Apple accepted the revocation of.
    func revoke(_ tokens: [ServerFunctions.DeletedAppleToken], app: UUID, as identity: RequestIdentity) async throws -> Int {
        guard !tokens.isEmpty, let key = try await self.functions.appleSettings(as: identity)?.key else { return 0 }
        let sealer = try AppleTokenSealer(signer: self.signer)
        var revoked = 0
        for token in tokens {
            guard let refreshToken = sealer.open(token.sealed, app: app, subject: token.subject) else { continue }
            do {
                try await self.apple.authClient(key).revoke(refreshToken: refreshToken, clientID: token.clientID)
                revoked += 1
            } catch {
                self.apple.logger.warning("Apple token revocation failed", metadata: ["error": "\(error)"])
            }
        }
        return revoked
    }
}
