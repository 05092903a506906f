import Foundation
import GuestPassCrypto
import Hummingbird
import Logging
import NIOConcurrencyHelpers

/// Builds a local stand-in for Apple's Sign in with Apple endpoints: real HTTP, Apple's key format, so the production
/// `AppleKeyStore` runs unchanged against `http://<host>:<port>`. For development and tests only.
///
/// Apple's endpoint: `GET /auth/keys`, the JWKS of the stand-in's RS256 keys (2048-bit, generated at start).
///
/// Control endpoints, unauthenticated (never expose the stand-in beyond localhost):
/// - `POST /_standin/id-token` `{"sub","aud","nonce","email","is_private_email","expires_in","iat_offset","iss",
///   "kid","foreign_key"}`: an identity token as Apple issues it, signed with the current key (`sub` and `aud`
///   required; `nonce` is written as given, so send `hex(sha256(raw))` as an app would; `expires_in` seconds from now,
///   default 600, negative for an expired token; `iss` default Apple's; `kid` overrides the header's key id;
///   `foreign_key: true` signs with a key Apple never published, under the current `kid`). Answers `{"id_token"}`.
/// - `POST /_standin/rotate-keys`: a new current key; the previous one stays listed. Answers `{"kid"}`.
/// - `POST /_standin/outage` `{"down": true|false}`: while down, `/auth/keys` answers 503.
/// - `GET /_standin/stats`: `{"key_fetches"}`, how many times `/auth/keys` was served.
public func buildAppleStandIn(
    host: String, port: Int, state: AppleStandInState, logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let router = Router()
    AppleStandInRoutes(state: state).register(on: router)
    return Application(
        router: router,
        configuration: .init(address: .hostname(host, port: port), serverName: "apple-standin"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
        logger: logger
    )
}

/// The stand-in's keys and switches, shared with in-process tests.
public final class AppleStandInState: Sendable {
    struct Key: Sendable {
        let id: String
        let privateKey: RSAPrivateKey
        let jwk: [String: String]
    }

    private struct Values {
        var keys: [Key]
        var down = false
        var keyFetches = 0
    }

    private let values: NIOLockedValueBox<Values>
    /// A key Apple never published (`foreign_key`).
    private let foreignKey: RSAPrivateKey

    public init() throws {
        self.values = NIOLockedValueBox(Values(keys: [try Self.newKey()]))
        self.foreignKey = try RSAPrivateKey.generate()
    }

    /// Makes a new current key; the previous one stays listed. Returns its `kid`.
    @discardableResult
    public func rotateKeys() throws -> String {
        let key = try Self.newKey()
        self.values.withLockedValue { values in
            values.keys = [key] + values.keys.prefix(1)
        }
        return key.id
    }

    /// While `down`, `/auth/keys` answers 503.
    public func setDown(_ down: Bool) { self.values.withLockedValue { $0.down = down } }

    /// How many times `/auth/keys` was served.
    public var keyFetches: Int { self.values.withLockedValue { $0.keyFetches } }

    /// The JWKS document, or nil while down (counts a fetch either way).
    func keySet() -> [[String: String]]? {
        self.values.withLockedValue { values in
            values.keyFetches += 1
            return values.down ? nil : values.keys.map(\.jwk)
        }
    }

    /// An identity token for `request`.
    func identityToken(_ request: IdentityTokenRequest, now: Date = Date()) throws -> String {
        let current = self.values.withLockedValue { $0.keys[0] }
        let keyID = request.kid ?? current.id
        let signer = try JWTSigner(key: request.foreign_key == true ? self.foreignKey : current.privateKey, keyID: keyID)
        let issuedAt = Int(now.timeIntervalSince1970) + (request.iat_offset ?? 0)
        let claims = AppleClaims(
            iss: request.iss ?? "https://appleid.apple.com", aud: request.aud, exp: Int(now.timeIntervalSince1970) + (request.expires_in ?? 600),
            iat: issuedAt, sub: request.sub, nonce: request.nonce, c_hash: "standin", email: request.email,
            email_verified: request.email == nil ? nil : "true", is_private_email: request.is_private_email.map { $0 ? "true" : "false" },
            auth_time: issuedAt, nonce_supported: true
        )
        return try signer.sign(claims)
    }

    private static func newKey() throws -> Key {
        let key = try RSAPrivateKey.generate()
        let publicKey = try key.publicKey
        let id = String(try publicKey.thumbprint.prefix(10))
        let (modulus, exponent) = try publicKey.components
        let jwk = ["kty": "RSA", "kid": id, "use": "sig", "alg": "RS256", "n": Base64URL.encode(modulus), "e": Base64URL.encode(exponent)]
        return Key(id: id, privateKey: key, jwk: jwk)
    }
}

/// `POST /_standin/id-token`'s body.
struct IdentityTokenRequest: Decodable {
    let sub: String
    let aud: String
    let nonce: String?
    let email: String?
    let is_private_email: Bool?
    let expires_in: Int?
    let iat_offset: Int?
    let iss: String?
    let kid: String?
    let foreign_key: Bool?
}

/// The claims of Apple's identity tokens (booleans as Apple writes them: strings).
struct AppleClaims: Encodable {
    let iss: String
    let aud: String
    let exp: Int
    let iat: Int
    let sub: String
    let nonce: String?
    let c_hash: String
    let email: String?
    let email_verified: String?
    let is_private_email: String?
    let auth_time: Int
    let nonce_supported: Bool
}

/// The stand-in's routes.
struct AppleStandInRoutes: Sendable {
    let state: AppleStandInState

    func register(on router: Router<BasicRequestContext>) {
        router.get("auth/keys") { _, _ -> Response in
            guard let keys = self.state.keySet() else {
                return Response(status: .serviceUnavailable, body: .init(byteBuffer: ByteBuffer(string: "unavailable")))
            }
            return try Self.json(["keys": keys])
        }
        router.post("_standin/id-token") { request, context -> Response in
            let body = try await request.decode(as: IdentityTokenRequest.self, context: context)
            return try Self.json(["id_token": try self.state.identityToken(body)])
        }
        router.post("_standin/rotate-keys") { _, _ -> Response in
            try Self.json(["kid": try self.state.rotateKeys()])
        }
        router.post("_standin/outage") { request, context -> Response in
            struct Outage: Decodable { let down: Bool }
            self.state.setDown(try await request.decode(as: Outage.self, context: context).down)
            return Response(status: .noContent)
        }
        router.get("_standin/stats") { _, _ -> Response in
            try Self.json(["key_fetches": self.state.keyFetches])
        }
    }

    static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: try encoder.encode(value)))
        )
    }
}
