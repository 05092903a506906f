import Foundation
import GuestPassApple
import GuestPassCrypto
import GuestPassPostgres
import GuestPassStore
import Logging
import NIOConcurrencyHelpers
import GuestPassJSON

/// One `AppleIdentityVerifier` (with its key cache) per Apple base URL, created on first use: every app on Apple's
/// own host shares one cache of Apple's keys. Also one `AppleAuthClient` per app key (its `.p8` read on first use).
final class AppleVerifiers: Sendable {
    private let verifiers = NIOLockedValueBox([String: AppleIdentityVerifier]())
    private let clients = NIOLockedValueBox([AppleSettings.KeySettings: AppleAuthClient]())
    let logger: Logger
    /// The longest one call to Apple may take (`GUESTPASS_APPLE_TIMEOUT_MS`); a refused connection fails at once.
    let timeout: Duration

    init(logger: Logger, timeout: Duration = AppleHTTP.defaultTimeout) {
        self.logger = logger
        self.timeout = timeout
    }

    func verifier(baseURL: String) -> AppleIdentityVerifier {
        self.verifiers.withLockedValue { verifiers in
            if let verifier = verifiers[baseURL] { return verifier }
            let verifier = AppleIdentityVerifier(keys: AppleKeyStore(baseURL: baseURL, timeout: self.timeout, logger: self.logger))
            verifiers[baseURL] = verifier
            return verifier
        }
    }

    /// The code-exchange and revocation client of `key`; throws when its `.p8` cannot be read or parsed.
    func authClient(_ key: AppleSettings.KeySettings) throws -> AppleAuthClient {
        if let client = self.clients.withLockedValue({ $0[key] }) { return client }
        let pem = try String(contentsOfFile: key.keyPath, encoding: .utf8)
        let client = AppleAuthClient(
            baseURL: key.baseURL, teamID: key.teamID, keyID: key.keyID, privateKey: try ES256PrivateKey(pemRepresentation: pem),
            timeout: self.timeout, logger: self.logger
        )
        self.clients.withLockedValue { $0[key] = client }
        return client
    }
}

/// Apple's refresh tokens at rest: sealed with AES-256-GCM under a key derived from the signing key, bound to the app
/// and the Apple subject.
struct AppleTokenSealer: Sendable {
    let key: [UInt8]

    init(signer: JWTSigner) throws {
        self.key = try signer.derivedKey(label: "guestpass.apple-refresh-token.v1")
    }

    func seal(_ token: String, app: UUID, subject: String) throws -> [UInt8] {
        try AESGCM.seal(Array(token.utf8), key: self.key, associatedData: Self.binding(app, subject))
    }

    func open(_ box: [UInt8], app: UUID, subject: String) -> String? {
        AESGCM.open(box, key: self.key, associatedData: Self.binding(app, subject)).map { String(decoding: $0, as: UTF8.self) }
    }

    private static func binding(_ app: UUID, _ subject: String) -> [UInt8] {
        Array("\(app.lowercasedString):\(subject)".utf8)
    }
}
