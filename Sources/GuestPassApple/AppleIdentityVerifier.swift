public import Foundation
import GuestPassCrypto

/// What a verified Apple identity token says about the user.
public struct AppleIdentity: Sendable, Equatable {
    /// Apple's stable user id for this team (`sub`).
    public let subject: String
    /// The audience the token was issued to (the app's bundle id or Services id).
    public let audience: String
    /// The email Apple shared, if any (a relay address when `isPrivateEmail`).
    public let email: String?
    /// Whether `email` is a private relay address.
    public let isPrivateEmail: Bool
}

/// Verifies Sign in with Apple identity tokens (`apple-jwt.md` §3).
///
/// Checks, in order: RS256 only (the key from Apple's JWKS by `kid`, `AppleKeyStore`); the signature; `exp` (with
/// `leeway`), `iat` not in the future; `iss` = `https://appleid.apple.com`; `aud` one of the app's audiences; `sub`
/// present; then the nonce rule: when the token has a `nonce`, the request must send the raw nonce and
/// `hex(sha256(raw))` must equal it; a request nonce with a token that has none is refused too.
public struct AppleIdentityVerifier: Sendable {
    /// Apple's issuer.
    public static let issuer = "https://appleid.apple.com"

    let keys: AppleKeyStore
    let leeway: TimeInterval

    public init(keys: AppleKeyStore, leeway: TimeInterval = 60) {
        self.keys = keys
        self.leeway = leeway
    }

    /// Verifies `token` for an app accepting `audiences`, with the request's raw `nonce`.
    ///
    /// - Throws: `AppleSignInError` only.
    public func verify(_ token: String, audiences: Set<String>, nonce: String?, now: Date = Date()) async throws -> AppleIdentity {
        guard let header = try? JWTHeader.peek(token) else { throw AppleSignInError(.invalidToken, "malformed token") }
        guard header.algorithm == .rs256 else { throw AppleSignInError(.invalidToken, "the token is not RS256") }
        guard let keyID = header.keyID else { throw AppleSignInError(.invalidToken, "the token has no kid") }
        let key = try await self.keys.key(id: keyID)

        let claims: Claims
        do {
            let verifier = try JWTVerifier(
                keys: [.rs256(key, keyID: keyID)], issuers: [Self.issuer], audiences: audiences, leeway: self.leeway
            )
            claims = try verifier.verify(token, as: Claims.self, now: now)
        } catch let error as JWTError {
            throw AppleSignInError(.invalidToken, "\(error.reason)")
        } catch {
            throw AppleSignInError(.invalidToken, "the token could not be verified")
        }
        guard let subject = claims.sub, !subject.isEmpty, subject.utf8.count <= 255 else {
            throw AppleSignInError(.invalidToken, "the token has no sub")
        }
        switch (claims.nonce, nonce) {
        case (nil, nil): break
        case (nil, .some): throw AppleSignInError(.nonceMismatch, "a nonce was sent but the token carries none")
        case (.some, nil): throw AppleSignInError(.nonceMissing, "the token carries a nonce and none was sent")
        case (.some(let expected), .some(let raw)):
            let hashed = Digest.sha256Hex(raw)
            guard ConstantTime.equals(Array(hashed.utf8), Array(expected.lowercased().utf8)) else {
                throw AppleSignInError(.nonceMismatch, "the nonce does not match the token's")
            }
        }
        guard let audience = claims.aud.values.first(where: audiences.contains) else {
            throw AppleSignInError(.invalidToken, "wrongAudience")
        }
        let email = claims.email.flatMap { $0.isEmpty || $0.utf8.count > 320 ? nil : $0 }
        return AppleIdentity(subject: subject, audience: audience, email: email, isPrivateEmail: claims.is_private_email?.value ?? false)
    }

    /// The claims read from Apple's token; Apple writes some booleans as strings ("true").
    struct Claims: Decodable {
        let sub: String?
        let aud: JWTAudience
        let nonce: String?
        let email: String?
        let is_private_email: LenientBool?
    }
}

/// A boolean Apple may write as `true` or as `"true"`.
struct LenientBool: Decodable {
    let value: Bool

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let bool = try? container.decode(Bool.self) {
            self.value = bool
        } else {
            self.value = (try container.decode(String.self)).lowercased() == "true"
        }
    }
}
