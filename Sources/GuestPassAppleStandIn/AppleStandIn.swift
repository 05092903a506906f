import Foundation
public import GuestPassCrypto
public import Hummingbird
public import Logging
import NIOConcurrencyHelpers
import NIOFoundationEssentialsCompat

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
/// - `POST /_standin/withdraw-key` `{"kid"}`: Apple stops listing that key (not the current one: 409; unknown: 404);
///   tokens it signed must stop verifying once the server has fetched the keys again. 204.
/// - `POST /_standin/outage` `{"down": true|false}`: while down, `/auth/keys` answers 503.
/// - `POST /_standin/authorization-code` `{"sub","aud"}`: a one-time authorization code, as the app would receive it.
/// - `GET /_standin/stats`: `{"key_fetches","revoked"}`: how many times `/auth/keys` was served, and the `sub` of every
///   refresh token revoked (in order).
///
/// With a client key (`AppleStandInState(clientKey:)`), Apple's `POST /auth/token` (grant `authorization_code`) and
/// `POST /auth/revoke` check the client secret (ES256 under that key and `kid`, `iss` = team id, `aud` = Apple, `sub` =
/// the form's `client_id`, unexpired) and answer as Apple does (`invalid_client`, `invalid_grant`, 200).
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
        /// Unused authorization codes → (sub, client id).
        var codes: [String: (sub: String, clientID: String)] = [:]
        /// Issued refresh tokens → (sub, client id).
        var refreshTokens: [String: (sub: String, clientID: String)] = [:]
        var revoked: [String] = []
    }

    /// The app key client secrets must be signed with: team id, key id and public key.
    public struct ClientKey: Sendable {
        public let teamID: String
        public let keyID: String
        public let publicKey: ES256PublicKey

        public init(teamID: String, keyID: String, publicKey: ES256PublicKey) {
            self.teamID = teamID
            self.keyID = keyID
            self.publicKey = publicKey
        }
    }

    let clientKey: ClientKey?

    private let values: NIOLockedValueBox<Values>
    /// A key Apple never published (`foreign_key`).
    private let foreignKey: RSAPrivateKey

    public init(clientKey: ClientKey? = nil) throws {
        self.values = NIOLockedValueBox(Values(keys: [try Self.newKey()]))
        self.foreignKey = try RSAPrivateKey.generate()
        self.clientKey = clientKey
    }

    /// The `sub`s of the refresh tokens revoked so far, in order.
    public var revoked: [String] { self.values.withLockedValue { $0.revoked } }

    func authorizationCode(sub: String, clientID: String) throws -> String {
        let code = "c." + Base64URL.encode(try SecureRandom.bytes(24))
        self.values.withLockedValue { $0.codes[code] = (sub, clientID) }
        return code
    }

    /// `/auth/token` and `/auth/revoke`'s client check: nil when the secret is valid for `clientID`.
    func clientError(secret: String?, clientID: String?) -> String? {
        guard let key = self.clientKey, let secret, let clientID else { return "invalid_client" }
        struct Secret: Decodable { let sub: String }
        guard
            let verifier = try? JWTVerifier(
                keys: [.es256(key.publicKey, keyID: key.keyID)], issuers: [key.teamID], audiences: ["https://appleid.apple.com"]),
            let claims = try? verifier.verify(secret, as: Secret.self), claims.sub == clientID
        else { return "invalid_client" }
        return nil
    }

    /// Redeems a code once: Apple's refresh token for it, or nil (`invalid_grant`).
    func redeem(code: String, clientID: String) throws -> String? {
        let token = "r." + Base64URL.encode(try SecureRandom.bytes(32))
        return self.values.withLockedValue { values in
            guard let grant = values.codes.removeValue(forKey: code), grant.clientID == clientID else { return nil }
            values.refreshTokens[token] = grant
            return token
        }
    }

    /// Revokes `token` if it is one of `clientID`'s (Apple answers 200 either way).
    func revoke(token: String, clientID: String) {
        self.values.withLockedValue { values in
            guard let grant = values.refreshTokens[token], grant.clientID == clientID else { return }
            values.refreshTokens[token] = nil
            values.revoked.append(grant.sub)
        }
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

    /// The outcome of `withdrawKey(_:)`.
    public enum Withdrawal: Sendable, Equatable {
        case withdrawn, unknown, current
    }

    /// Stops listing the key `kid` (as Apple withdraws one); the current key cannot be withdrawn (rotate first).
    @discardableResult
    public func withdrawKey(_ kid: String) -> Withdrawal {
        self.values.withLockedValue { values in
            guard let index = values.keys.firstIndex(where: { $0.id == kid }) else { return .unknown }
            guard index != 0 else { return .current }
            values.keys.remove(at: index)
            return .withdrawn
        }
    }

    /// The `kid` of the key new identity tokens are signed with.
    public var currentKeyID: String { self.values.withLockedValue { $0.keys[0].id } }

    /// The `kid`s `/auth/keys` lists, current first.
    public var listedKeyIDs: [String] { self.values.withLockedValue { $0.keys.map(\.id) } }

    /// An identity token as Apple issues it, signed with the current key (or `kid` in the header instead of its id;
    /// `foreignKey`: signed with a key Apple never published), valid `expiresIn` seconds.
    public func identityToken(
        sub: String, aud: String, nonce: String? = nil, expiresIn: Int = 600, kid: String? = nil, foreignKey: Bool = false
    ) throws -> String {
        try self.identityToken(
            IdentityTokenRequest(
                sub: sub, aud: aud, nonce: nonce, email: nil, is_private_email: nil, expires_in: expiresIn, iat_offset: nil,
                iss: nil, kid: kid, foreign_key: foreignKey
            )
        )
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
        router.post("_standin/withdraw-key") { request, context -> Response in
            struct Withdraw: Decodable { let kid: String }
            switch self.state.withdrawKey(try await request.decode(as: Withdraw.self, context: context).kid) {
            case .withdrawn: return Response(status: .noContent)
            case .unknown: return Response(status: .notFound)
            case .current: return Response(status: .conflict)
            }
        }
        router.post("_standin/outage") { request, context -> Response in
            struct Outage: Decodable { let down: Bool }
            self.state.setDown(try await request.decode(as: Outage.self, context: context).down)
            return Response(status: .noContent)
        }
        router.get("_standin/stats") { _, _ -> Response in
            struct Stats: Encodable {
                let key_fetches: Int
                let revoked: [String]
            }
            return try Self.json(Stats(key_fetches: self.state.keyFetches, revoked: self.state.revoked))
        }
        router.post("_standin/authorization-code") { request, context -> Response in
            struct Grant: Decodable {
                let sub: String
                let aud: String
            }
            let grant = try await request.decode(as: Grant.self, context: context)
            return try Self.json(["code": try self.state.authorizationCode(sub: grant.sub, clientID: grant.aud)])
        }
        router.post("auth/token") { request, _ -> Response in
            let form = try await Self.form(request)
            if let error = self.state.clientError(secret: form["client_secret"], clientID: form["client_id"]) {
                return try Self.appleError(error)
            }
            guard form["grant_type"] == "authorization_code" else { return try Self.appleError("unsupported_grant_type") }
            guard let code = form["code"], let clientID = form["client_id"], let token = try self.state.redeem(code: code, clientID: clientID)
            else { return try Self.appleError("invalid_grant") }
            return try Self.json([
                "access_token": "a.standin", "token_type": "Bearer", "refresh_token": token, "id_token": "",
            ])
        }
        router.post("auth/revoke") { request, _ -> Response in
            let form = try await Self.form(request)
            if let error = self.state.clientError(secret: form["client_secret"], clientID: form["client_id"]) {
                return try Self.appleError(error)
            }
            guard let token = form["token"], let clientID = form["client_id"] else { return try Self.appleError("invalid_request") }
            self.state.revoke(token: token, clientID: clientID)
            return Response(status: .ok)
        }
    }

    /// Apple's error answer: 400 `{"error": code}`.
    static func appleError(_ code: String) throws -> Response {
        var response = try Self.json(["error": code])
        response.status = .badRequest
        return response
    }

    /// An `application/x-www-form-urlencoded` body.
    static func form(_ request: Request) async throws -> [String: String] {
        let body = try await request.body.collect(upTo: 64 * 1024)
        var form: [String: String] = [:]
        for pair in String(buffer: body).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        return form
    }

    static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: try encoder.encode(value)))
        )
    }
}
