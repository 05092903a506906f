import Foundation
public import GuestPassCrypto
import GuestPassStore

/// Token, session and rate-limit settings.
public struct AuthConfiguration: Sendable {
    /// The key new access tokens are signed with (ES256 by default; HS256 for Supabase-legacy setups).
    public var signer: JWTSigner
    /// Extra keys accepted when verifying (rotation: the previous signing key, a standby key).
    public var additionalVerificationKeys: [JWTVerificationKey] = []
    /// `iss` of issued tokens, required on verified ones.
    public var issuer: String = "guestpass"
    /// `aud` of issued tokens, required on verified ones.
    public var audience: String = "authenticated"
    /// Access token lifetime (`exp` − `iat`).
    public var accessTokenLifetime: Int = 3600
    /// A revoked refresh token replayed within this many seconds returns the active session instead of revoking the family.
    public var refreshReuseWindow: Double = 10
    /// How long a transfer code lives, in seconds (`GUESTPASS_TRANSFER_CODE_TTL`, default 600, 60...86400).
    public var transferCodeLifetime: Int = 600
    /// The key refresh tokens are authenticated with (derived from the signing key unless configured).
    public var refreshTokenKey: [UInt8]
    /// Sign-ups per client IP: bucket size and refill per hour.
    public var signupBurstPerIP: Int = 30
    public var signupsPerHourPerIP: Double = 30
    /// Sign-ups per app: bucket size and refill per hour.
    public var signupBurstPerApp: Int = 1000
    public var signupsPerHourPerApp: Double = 10_000
    /// The header holding the client IP when a trusted proxy sets it (e.g. `X-Forwarded-For`); nil = the socket peer.
    public var trustedProxyHeader: String?
    /// Email: requests that mail a code (sign-up, /otp, /recover, /resend, /reauthenticate, an address change) per client
    /// address per five minutes (`GUESTPASS_EMAIL_SENDS_PER_IP`, default 30, GoTrue's `RATE_LIMIT_OTP`), also the burst.
    public var emailSendsPerIP: Int = 30
    /// Email: code and link verifications per client address per five minutes (`GUESTPASS_EMAIL_VERIFIES_PER_IP`, 30).
    public var emailVerifiesPerIP: Int = 30
    /// Password sign-ins per client address per five minutes (`GUESTPASS_PASSWORD_SIGNINS_PER_IP`, 150, GoTrue's token
    /// limit).
    public var passwordSignInsPerIP: Int = 150

    /// - Throws: when no `refreshTokenKey` is given and none can be derived from the signing key (fail closed).
    public init(signer: JWTSigner, refreshTokenKey: [UInt8]? = nil) throws {
        self.signer = signer
        self.refreshTokenKey = try refreshTokenKey ?? Self.deriveRefreshKey(from: signer)
    }

    /// Every key a token may be verified with: the signer's, then the additional ones.
    public var verificationKeys: [JWTVerificationKey] { [self.signer.verificationKey] + self.additionalVerificationKeys }

    private static func deriveRefreshKey(from signer: JWTSigner) throws -> [UInt8] {
        try signer.derivedKey(label: "guestpass refresh-token key v1")
    }

    /// Reads the settings from the environment: `GUESTPASS_JWT_SIGNING_KEY_FILE` (ES256 PKCS#8 PEM) or
    /// `GUESTPASS_JWT_HS256_SECRET`; `GUESTPASS_JWT_VERIFY_KEY_FILES` (comma-separated PEMs, public or private);
    /// `GUESTPASS_JWT_ISSUER`, `GUESTPASS_JWT_EXPIRY`, `GUESTPASS_REFRESH_REUSE_WINDOW`, `GUESTPASS_REFRESH_TOKEN_SECRET`,
    /// `GUESTPASS_SIGNUP_RATE_PER_HOUR`, `GUESTPASS_SIGNUP_BURST`, `GUESTPASS_APP_SIGNUP_RATE_PER_HOUR`,
    /// `GUESTPASS_APP_SIGNUP_BURST`, `GUESTPASS_TRUSTED_PROXY_HEADER`.
    public init(environment: [String: String]) throws {
        let signer: JWTSigner
        if let path = environment["GUESTPASS_JWT_SIGNING_KEY_FILE"], !path.isEmpty {
            let pem = try Self.read(path)
            signer = JWTSigner(key: try ES256PrivateKey(pemRepresentation: pem))
        } else if let secret = environment["GUESTPASS_JWT_HS256_SECRET"], !secret.isEmpty {
            let key = try HS256Key(secret: Array(secret.utf8))
            signer = JWTSigner(key: key, keyID: environment["GUESTPASS_JWT_HS256_KID"] ?? "hs256")
        } else {
            throw ConfigurationError(
                "no signing key: set GUESTPASS_JWT_SIGNING_KEY_FILE (create one with `guestpass keys generate --out FILE`) or GUESTPASS_JWT_HS256_SECRET"
            )
        }
        var refreshKey: [UInt8]?
        if let secret = environment["GUESTPASS_REFRESH_TOKEN_SECRET"], !secret.isEmpty {
            guard secret.utf8.count >= 32 else { throw ConfigurationError("GUESTPASS_REFRESH_TOKEN_SECRET must be at least 32 bytes") }
            refreshKey = Array(secret.utf8)
        }
        try self.init(signer: signer, refreshTokenKey: refreshKey)
        for path in (environment["GUESTPASS_JWT_VERIFY_KEY_FILES"] ?? "").split(separator: ",").map(String.init) where !path.isEmpty {
            let pem = try Self.read(path)
            if let key = try? ES256PrivateKey(pemRepresentation: pem) {
                self.additionalVerificationKeys.append(.es256(key.publicKey))
            } else {
                self.additionalVerificationKeys.append(.es256(try ES256PublicKey(pemRepresentation: pem)))
            }
        }
        if let issuer = environment["GUESTPASS_JWT_ISSUER"], !issuer.isEmpty { self.issuer = issuer }
        self.accessTokenLifetime = try Self.number(environment, "GUESTPASS_JWT_EXPIRY", default: 3600, range: 60...86_400 * 7)
        self.refreshReuseWindow = Double(try Self.number(environment, "GUESTPASS_REFRESH_REUSE_WINDOW", default: 10, range: 0...3600))
        self.transferCodeLifetime = try Self.number(environment, "GUESTPASS_TRANSFER_CODE_TTL", default: 600, range: 60...86400)
        self.signupsPerHourPerIP = Double(try Self.number(environment, "GUESTPASS_SIGNUP_RATE_PER_HOUR", default: 30, range: 1...1_000_000))
        self.signupBurstPerIP = try Self.number(environment, "GUESTPASS_SIGNUP_BURST", default: 30, range: 1...1_000_000)
        self.signupsPerHourPerApp = Double(
            try Self.number(environment, "GUESTPASS_APP_SIGNUP_RATE_PER_HOUR", default: 10_000, range: 1...100_000_000))
        self.signupBurstPerApp = try Self.number(environment, "GUESTPASS_APP_SIGNUP_BURST", default: 1000, range: 1...100_000_000)
        if let header = environment["GUESTPASS_TRUSTED_PROXY_HEADER"], !header.isEmpty { self.trustedProxyHeader = header }
        self.emailSendsPerIP = try Self.number(environment, "GUESTPASS_EMAIL_SENDS_PER_IP", default: 30, range: 1...100_000_000)
        self.emailVerifiesPerIP = try Self.number(environment, "GUESTPASS_EMAIL_VERIFIES_PER_IP", default: 30, range: 1...100_000_000)
        self.passwordSignInsPerIP = try Self.number(environment, "GUESTPASS_PASSWORD_SIGNINS_PER_IP", default: 150, range: 1...100_000_000)
    }

    private static func read(_ path: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError("cannot read key file \(path)")
        }
    }

    private static func number(_ environment: [String: String], _ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = environment[name], !text.isEmpty else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw ConfigurationError("\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }
}

extension SignUpLimits {
    /// The sign-up buckets of `configuration` (rates per hour become rates per second).
    init(_ configuration: AuthConfiguration) {
        self.init(
            burstPerIP: configuration.signupBurstPerIP, perSecondPerIP: configuration.signupsPerHourPerIP / 3600,
            burstPerApp: configuration.signupBurstPerApp, perSecondPerApp: configuration.signupsPerHourPerApp / 3600
        )
    }
}

// The signing key and the refresh-token key never reach a log, however a value holding them is printed.
extension AuthConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "AuthConfiguration(issuer: \(self.issuer), audience: \(self.audience))" }
    public var debugDescription: String { self.description }
    public var customMirror: Mirror { Mirror(self, children: ["issuer": self.issuer, "audience": self.audience]) }
}
