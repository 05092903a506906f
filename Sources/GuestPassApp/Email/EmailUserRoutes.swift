import Foundation
import GuestPassCrypto
import GuestPassJSON
import GuestPassStore
import Hummingbird

extension PasswordVerification {
    /// Whether the password matched, whatever the hash's age.
    var isMatch: Bool {
        if case .match = self { return true }
        return false
    }
}

/// A signed-in user's address and password: `PUT /auth/v1/user {email}` (a guest adding an address: a code to it;
/// the user stays the same once it is verified), `{password, nonce?}`, and `GET /auth/v1/reauthenticate`.
extension AuthRoutes {
    /// Applies `email` and `password` of a `PUT /auth/v1/user` body, before `data` (which the caller applies after).
    /// A guest's password goes with its new address (it works once the address is confirmed); anyone else's is a
    /// password change. Each step is its own transaction, in GoTrue's order: the password, then the address.
    func updateCredentials(_ body: [String: JSONValue], _ request: Request, _ context: SignedInContext) async throws {
        let caller = context.caller
        let hasEmail = body["email"] != nil && body["email"] != .null
        let password = try EmailInput.password(body)
        guard hasEmail || password != nil else { return }
        let address = hasEmail ? try EmailInput.address(body) : nil
        let nonce: String?
        switch body["nonce"] {
        case nil, .null?: nonce = nil
        case .string(let text)? where !text.isEmpty && text.utf8.count <= 64: nonce = text
        default: throw APIError.validation("nonce must be a string")
        }
        let settings = try await self.emailSettings(caller)
        guard let state = try await self.functions.passwordState(as: caller.identity), state.sessionActive else {
            throw APIError(.forbidden, code: GoTrueCode.sessionNotFound, message: "Session from session_id claim in JWT does not exist")
        }
        var guestPasswordHash: String?
        if let password {
            try EmailInput.checkStrength(password, settings)
            if state.isAnonymous && !state.hasAddress {
                guard address != nil else {
                    throw APIError(
                        .unprocessableContent, code: GoTrueCode.validationFailed,
                        message: "Updating password of an anonymous user without an email or phone is not allowed")
                }
                guestPasswordHash = try await self.email.hasher.hash(password)
            } else {
                if let current = state.passwordHash, try await self.email.hasher.verify(password, against: current).isMatch {
                    throw APIError(
                        .unprocessableContent, code: GoTrueCode.samePassword,
                        message: "New password should be different from the old password.")
                }
                let hash = try await self.email.hasher.hash(password)
                let outcome = try await self.functions.setPassword(
                    hash: hash, nonceHash: nonce.map { self.email.codes.codeHash($0, app: caller.appID) }, as: caller.identity)
                guard outcome.status == .updated else { throw Self.emailRefusal(outcome) }
            }
        }
        if let address {
            let outcome = try await self.functions.emailChangeRequest(
                email: address, passwordHash: guestPasswordHash, mail: try self.email.codes.issue(length: settings.otpLength, app: caller.appID),
                current: try self.email.codes.issue(length: settings.otpLength, app: caller.appID), pkce: try EmailInput.pkce(body),
                redirectTo: try EmailInput.redirectTo(request), bucket: self.email.sendBucket, as: caller.identity
            )
            switch outcome.status {
            case .pending, .confirmed, .unchanged: break
            default: throw Self.emailRefusal(outcome)
            }
        }
    }

    // MARK: GET /auth/v1/reauthenticate

    /// `reauthenticate()`: a code to the caller's confirmed address, the `nonce` of a password change.
    func reauthenticate(_ request: Request, _ context: SignedInContext) async throws -> Response {
        let caller = context.caller
        let settings = try await self.emailSettings(caller)
        let outcome = try await self.functions.reauthenticate(
            mail: try self.email.codes.issue(length: settings.otpLength, app: caller.appID), bucket: self.email.sendBucket,
            as: caller.identity)
        switch outcome.status {
        case .sent: return try EmptyObject().response(from: request, context: context)
        case .noAddress: throw APIError.validation("Reauthentication requires the user to have an email or a phone number")
        default: throw Self.emailRefusal(outcome)
        }
    }
}
