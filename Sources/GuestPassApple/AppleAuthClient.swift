public import AsyncHTTPClient
import Foundation
public import GuestPassCrypto
public import Logging
import NIOCore
import NIOHTTP1

/// Sign in with Apple's server-to-server calls for one app key: the authorization-code exchange (`/auth/token`), which
/// yields the refresh token that revocation needs, and the revocation itself (`/auth/revoke`, required when a user
/// deletes the account). Both authenticate with a client secret: an ES256 JWT signed with the app's `.p8` key
/// (`iss` = team id, `kid` = key id, `aud` = Apple, `sub` = the client id), made fresh per call and valid 5 minutes.
public struct AppleAuthClient: Sendable {
    let baseURL: String
    let teamID: String
    let signer: JWTSigner
    let httpClient: HTTPClient
    let timeout: TimeAmount
    let logger: Logger

    /// - Parameters:
    ///   - httpClient: by default `AppleHTTP.shared`: a refused connection or a name that does not resolve fails at once.
    ///   - timeout: the longest one call may take, connecting included (`GUESTPASS_APPLE_TIMEOUT_MS`).
    public init(
        baseURL: String, teamID: String, keyID: String, privateKey: ES256PrivateKey, httpClient: HTTPClient = AppleHTTP.shared,
        timeout: Duration = AppleHTTP.defaultTimeout, logger: Logger
    ) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.teamID = teamID
        self.signer = JWTSigner(key: privateKey, keyID: keyID)
        self.httpClient = httpClient
        self.timeout = timeout.timeAmount
        self.logger = logger
    }

    struct ClientSecretClaims: Encodable {
        let iss: String
        let iat: Int
        let exp: Int
        let aud: String
        let sub: String
    }

    func clientSecret(clientID: String, now: Date = Date()) throws -> String {
        let issuedAt = Int(now.timeIntervalSince1970)
        return try self.signer.sign(
            ClientSecretClaims(iss: self.teamID, iat: issuedAt, exp: issuedAt + 300, aud: AppleIdentityVerifier.issuer, sub: clientID)
        )
    }

    /// Exchanges the app's one-time `code` for Apple's refresh token.
    ///
    /// - Throws: `AppleAuthError` with Apple's `error` code (e.g. `invalid_grant` for a used or expired code).
    public func exchange(code: String, clientID: String) async throws -> String {
        struct TokenResponse: Decodable { let refresh_token: String? }
        let body = try await self.post(
            "/auth/token",
            ["client_id": clientID, "client_secret": try self.clientSecret(clientID: clientID), "code": code, "grant_type": "authorization_code"]
        )
        guard let token = try? JSONDecoder().decode(TokenResponse.self, from: body).refresh_token, !token.isEmpty else {
            throw AppleAuthError(code: "invalid_response", status: 200)
        }
        return token
    }

    /// Revokes Apple's refresh token `token` (Apple answers 200 for an already revoked one too).
    public func revoke(refreshToken token: String, clientID: String) async throws {
        _ = try await self.post(
            "/auth/revoke",
            [
                "client_id": clientID, "client_secret": try self.clientSecret(clientID: clientID), "token": token,
                "token_type_hint": "refresh_token",
            ]
        )
    }

    private func post(_ path: String, _ form: [String: String]) async throws -> Data {
        let started = ContinuousClock.now
        do {
            let body = try await self.send(path, form)
            AppleCallMetrics.record(String(path.dropFirst("/auth/".count)), outcome: "ok", since: started)
            return body
        } catch let error as AppleAuthError {
            AppleCallMetrics.record(String(path.dropFirst("/auth/".count)), outcome: error.code, since: started)
            throw error
        }
    }

    private func send(_ path: String, _ form: [String: String]) async throws -> Data {
        var request = HTTPClientRequest(url: self.baseURL + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(ByteBuffer(string: Self.formEncoded(form)))
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await self.httpClient.execute(request, timeout: self.timeout, logger: self.logger)
            body = try await response.body.collect(upTo: 64 * 1024)
        } catch {
            throw AppleAuthError(code: "unreachable", status: 0)
        }
        guard response.status == .ok else {
            struct ErrorResponse: Decodable { let error: String }
            let code = (try? JSONDecoder().decode(ErrorResponse.self, from: Data(body.readableBytesView)).error) ?? "http_error"
            throw AppleAuthError(code: code, status: Int(response.status.code))
        }
        return Data(body.readableBytesView)
    }

    /// `application/x-www-form-urlencoded`, keys sorted.
    static func formEncoded(_ form: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return form.sorted { $0.key < $1.key }.map { key, value in
            "\(key)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
    }
}

/// Apple refused or could not be reached for a code exchange or a revocation.
public struct AppleAuthError: Error, Sendable, CustomStringConvertible {
    /// Apple's `error` (`invalid_grant`, `invalid_client`, …), `unreachable` or `http_error`.
    public let code: String
    /// The HTTP status (0 when unreachable).
    public let status: Int

    public var description: String { "Apple answered \(self.status) \(self.code)" }
}
