import Foundation
import GuestPassJSON

/// The claims of an access token: Supabase/PostgREST-compatible, plus `app_id` and `device_id`
/// (the device row's public id, never the device secret).
struct AccessClaims: Encodable, Sendable {
    struct AuthenticationMethod: Encodable, Sendable {
        let method: String
        let timestamp: Int
    }

    let sub: String
    let role: String
    let aud: String
    let iss: String
    let exp: Int
    let iat: Int
    let session_id: String
    let is_anonymous: Bool
    let amr: [AuthenticationMethod]
    let aal: String
    let app_metadata: JSONValue
    let user_metadata: JSONValue
    let email: String
    let phone: String
    let app_id: String
    let device_id: String?

    /// The claims a verified token is acted on by, decoded from its payload. The rest is not decoded (the payload goes
    /// on as signed): Foundation's decoder would read the metadata's numbers as `Double`s, and refuse `1e399`.
    struct ActedOn: Decodable {
        let sub: String
        let role: String
        let exp: Int
        let session_id: String
        let app_id: String
        let device_id: String?
    }
}

/// The parts of a verified access token the server acts on.
struct VerifiedAccessToken: Sendable {
    let userID: UUID
    let sessionID: UUID
    let appID: UUID
    let deviceID: UUID?
    let expiresAt: Int
    /// The payload exactly as signed: what `request.jwt.claims` is set to.
    let claimsJSON: String
}
