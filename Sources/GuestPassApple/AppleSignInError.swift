/// Why an Apple identity token was refused, or why it could not be checked.
public struct AppleSignInError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kinds of refusal.
    public enum Reason: String, Sendable {
        /// The token is malformed, badly signed, expired, for another audience or issuer, or not RS256.
        case invalidToken
        /// Its `kid` is not among Apple's keys, even after fetching them again.
        case unknownKey
        /// The token carries a nonce and the request's nonce does not hash to it, or the request sent a nonce the token
        /// does not carry.
        case nonceMismatch
        /// The token carries a nonce and the request sent none.
        case nonceMissing
        /// Apple's keys could not be fetched and none are cached (the only refusal that is not the token's fault).
        case keysUnavailable
    }

    public let reason: Reason
    /// What was wrong, for logs (never the token).
    public let detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(self.reason.rawValue): \(self.detail)" }
}
