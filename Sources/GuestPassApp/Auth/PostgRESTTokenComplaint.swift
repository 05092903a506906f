import Foundation
import GuestPassCrypto
import GuestPassStore

/// Why a bearer token was refused, in PostgREST's words (`PGRST301`/`PGRST303`, `Error.hs`), for the `/rest/v1`
/// routes: hosted Supabase checks tokens there with PostgREST, so its clients see these texts. Told from the token's
/// shape alone (never from the key or the signature, so no text says more than "not ours"): other than three parts,
/// a header that is not JSON, `alg: none`, then the time claims (a token of ours past `exp`, or with `nbf` or `iat` ahead,
/// beyond the 30 s of clock skew allowed); any other refusal (another key, another algorithm, a bad
/// signature) is jose's "no suitable key". The auth routes keep GoTrue's texts (`Authenticator`).
struct PostgRESTTokenComplaint: Sendable {
    let code: String
    let message: String
    let details: String?

    init(bearer: String, refusal: TokenService.AccessTokenRefusal) {
        let parts = bearer.split(separator: ".", omittingEmptySubsequences: false)
        let header = parts.first.flatMap { Base64URL.decode(String($0)) }.flatMap {
            try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any]
        }
        if parts.count != 3 {
            self.init(PostgRESTCode.invalidToken, "Expected 3 parts in JWT; got \(parts.count)")
        } else if header == nil {
            self.init(PostgRESTCode.invalidToken, "JWT cryptographic operation failed")
        } else if (header?["alg"] as? String)?.lowercased() == "none" {
            self.init(
                PostgRESTCode.invalidToken, "Wrong or unsupported encoding algorithm", details: "JWT is unsecured but expected 'alg' was not 'none'")
        } else if case .expired = refusal {
            self.init(PostgRESTCode.invalidClaims, "JWT expired")
        } else if case .notYetValid = refusal {
            self.init(PostgRESTCode.invalidClaims, "JWT not yet valid")
        } else if case .issuedInFuture = refusal {
            self.init(PostgRESTCode.invalidClaims, "JWT issued at future")
        } else if case .otherApp = refusal {
            self.init(PostgRESTCode.invalidToken, "The access token belongs to another app")
        } else {
            self.init(PostgRESTCode.invalidToken, "No suitable key or wrong key type", details: "None of the keys was able to decode the JWT")
        }
    }

    private init(_ code: String, _ message: String, details: String? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }
}
