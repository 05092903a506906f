import Foundation
import GuestPassCrypto

/// Mints the DeviceCheck authorization JWT and reuses it for a while.
///
/// The token is `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}.{"iss":TEAM_ID,"iat":seconds}` signed with the raw
/// 64-byte R‖S signature. Apple follows the APNs rule (refresh no more than every 20 and no less than every 60
/// minutes), so a token is re-minted once it is `maximumAge` old, or if the clock went back.
actor AuthorizationTokenCache {
    /// The claims of the authorization token.
    struct Claims: Codable, Sendable {
        let iss: String
        let iat: Int
    }

    /// A token and whether it was minted by this very call.
    struct Token: Sendable {
        let value: String
        let issuedAt: Int
        let isFresh: Bool
    }

    static let maximumAge = 20 * 60

    private let signer: JWTSigner
    private let teamID: String
    private var current: (value: String, issuedAt: Int)?

    init(teamID: String, keyID: String, privateKey: ES256PrivateKey) {
        self.signer = JWTSigner(key: privateKey, keyID: keyID)
        self.teamID = teamID
    }

    /// The cached token, or a new one if there is none or it is too old.
    func token(now: Date = Date()) throws -> Token {
        let seconds = Int(now.timeIntervalSince1970)
        if let current, seconds - current.issuedAt < Self.maximumAge, seconds >= current.issuedAt - 60 {
            return Token(value: current.value, issuedAt: current.issuedAt, isFresh: false)
        }
        let value = try self.signer.sign(Claims(iss: self.teamID, iat: seconds))
        self.current = (value, seconds)
        return Token(value: value, issuedAt: seconds, isFresh: true)
    }

    /// Forgets `value` if it is the cached token (after Apple rejected it), so the next call mints a new one.
    func invalidate(_ value: String) {
        if self.current?.value == value { self.current = nil }
    }
}
