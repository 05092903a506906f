import Foundation
import GuestPassCrypto
import GuestPassPostgres
import GuestPassStore
import Hummingbird
import GuestPassApple
import Logging
import GuestPassJSON

/// Account routes under `/v1/account` (GoTrue's error shape), for a signed-in user.
///
/// `POST /v1/account/merge` `{guest_refresh_token}`: merges a guest into the caller's account
/// (`guestpass_server.merge_guest`, one transaction), after linking Apple answered `identity_already_exists`: the app
/// signs in to the existing account and sends the guest's refresh token as proof of possession. Answers
/// `{user_id, merged_user_id, credits_moved, credits_balance, rows_moved}`. A token that is not a live refresh token of
/// this app (revoked, another app's, already merged) is 400 `refresh_token_not_found`; the caller's own, 422
/// `same_user`; a token of a user who is not a guest, 422 `not_a_guest`; a unique-key conflict while moving rows, 409
/// `merge_conflict`, and nothing changed.
///
/// `POST /v1/devices/transfer-code` (a signed-in phone): a one-time transfer code (10 minutes by default) and its QR
/// payload; `POST /v1/account/recovery-code`: a recovery code, shown once. Both are redeemed in the sign-up call
/// (`data.transfer_code` / `data.recovery_code` with the new phone's own `device_id`).
///
/// `POST /v1/account/delete`: deletes the caller and every row that references it (`guestpass_server.delete_account`),
/// then revokes at Apple each Apple refresh token the account held (kept from the `authorization_code` the app sent at
/// sign-in, when the app configured its Sign in with Apple key). Answers `{deleted: true, apple_tokens_revoked}`; a
/// revocation Apple refuses or that cannot reach Apple is logged (the account stays deleted).
struct AccountRoutes: Sendable {
    let functions: ServerFunctions
    let authenticator: Authenticator
    let tokens: TokenService
    let apple: AppleVerifiers
    /// The exposed schemas whose rows a merge moves or a deletion removes (public always).
    let schemas: [String]

    func register(on router: Router<AppRequestContext>) {
        router.group("v1/account").add(middleware: ErrorMiddleware(dialect: .goTrue))
            .add(middleware: AuthenticationMiddleware(authenticator: self.authenticator))
            .group(context: SignedInContext.self)
            .post("merge") { request, context in try await self.merge(request, context) }
            .post("delete") { _, context in try await self.delete(context) }
            .post("recovery-code") { _, context in try await self.newCode(.recovery, context) }
        router.group("v1/devices").add(middleware: ErrorMiddleware(dialect: .goTrue))
            .add(middleware: AuthenticationMiddleware(authenticator: self.authenticator))
            .group(context: SignedInContext.self)
            .post("transfer-code") { _, context in try await self.newCode(.transfer, context) }
    }

    struct CodeResponse: ResponseEncodable {
        let code: String
        /// What a QR code shows, for the new phone to scan (transfer codes).
        let qr_payload: String?
        let expires_at: String?
    }

    /// `POST /v1/devices/transfer-code` and `POST /v1/account/recovery-code`: a new one-time code for the caller,
    /// shown once (only its SHA-256 is stored). A new recovery code voids the previous one.
    func newCode(_ kind: AccountCode.Kind, _ context: SignedInContext) async throws -> CodeResponse {
        let code = try AccountCode.generate(kind)
        guard let hash = AccountCode.hash(code) else { throw APIError.unexpected }
        let expires = try await self.functions.createAccountCode(
            kind, codeHash: hash, lifetime: self.tokens.configuration.transferCodeLifetime, as: context.caller.identity
        )
        return CodeResponse(
            code: code, qr_payload: kind == .transfer ? "guestpass:transfer?code=\(code)" : nil, expires_at: expires.map(RFC3339.format)
        )
    }

    struct DeleteResponse: ResponseEncodable {
        let deleted: Bool
        let apple_tokens_revoked: Int
    }

    func delete(_ context: SignedInContext) async throws -> DeleteResponse {
        let caller = context.caller
        let appleTokens = try await self.functions.deleteAccount(schemas: self.schemas, as: caller.identity)
        let revoker = AppleTokenRevoker(functions: self.functions, apple: self.apple, signer: self.tokens.configuration.signer)
        let revoked = try await revoker.revoke(appleTokens, app: caller.appID, as: caller.anonIdentity)
        return DeleteResponse(deleted: true, apple_tokens_revoked: revoked)
    }

    struct MergeResponse: ResponseEncodable {
        let user_id: String
        let merged_user_id: String
        let credits_moved: Int
        let credits_balance: Int
        let rows_moved: JSONValue
    }

    func merge(_ request: Request, _ context: SignedInContext) async throws -> MergeResponse {
        var request = request
        let body = try await request.jsonObject(limit: BodyLimits.token)
        guard let presented = body["guest_refresh_token"]?.stringValue, !presented.isEmpty else {
            throw APIError.validation("guest_refresh_token is required")
        }
        guard let parsed = self.tokens.parseRefreshToken(presented) else { throw AuthRoutes.refreshTokenNotFound }
        let outcome: MergeOutcome
        do {
            outcome = try await self.functions.mergeGuest(
                session: parsed.session, tokenHash: Digest.sha256Hex(presented), schemas: self.schemas, as: context.caller.identity
            )
        } catch let error as PostgresError where error.sqlState == .uniqueViolation {
            throw APIError(
                .conflict, code: GoTrueCode.mergeConflict,
                message: "A row of the guest conflicts with one of the account (a unique key); nothing was merged"
            )
        }
        switch outcome {
        case .merged(let guest, let creditsMoved, let balance, let rows):
            return MergeResponse(
                user_id: context.token.userID.lowercasedString, merged_user_id: guest.lowercasedString, credits_moved: creditsMoved,
                credits_balance: balance, rows_moved: rows
            )
        case .tokenNotFound: throw AuthRoutes.refreshTokenNotFound
        case .sameUser: throw APIError(.unprocessableContent, code: GoTrueCode.sameUser, message: "The refresh token is the account's own")
        case .notAGuest: throw APIError(.unprocessableContent, code: GoTrueCode.notAGuest, message: "Only a guest can be merged into an account")
        }
    }
}
