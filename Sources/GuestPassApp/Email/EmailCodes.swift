public import Foundation
import GuestPassCrypto
import GuestPassStore

/// Draws the one-time codes and link tokens mailed to users, hashes them as the database keeps them, and seals them
/// into the outbox payload that only the server's mail sender opens.
///
/// - A code is `length` uniform decimal digits; the database keeps `HMAC-SHA256(codeKey, "<app id>:<code>")` in hex,
///   so a copy of the table cannot be searched offline (a million six-digit codes are a second's work against a bare
///   hash, as GoTrue keeps them). The lookup goes by address, so the address is not in the MAC.
/// - A link token is 32 random bytes, base64url; the database keeps its SHA-256 (it is already unguessable).
/// - The payload is `{"code", "link"}` sealed with AES-256-GCM, bound to the app: the outbox holds no code in the clear,
///   and the sender erases it once the mail is sent.
///
/// Both keys derive from the refresh-token key (`GUESTPASS_REFRESH_TOKEN_SECRET` when set), which stays the same
/// across a signing-key rotation.
struct EmailCodeIssuer: Sendable {
    private let codeKey: [UInt8]
    private let sealKey: [UInt8]

    init(refreshTokenKey: [UInt8]) {
        self.codeKey = HMACSHA256.authenticationCode(for: Array("guestpass.email-code.v1".utf8), key: refreshTokenKey)
        self.sealKey = HMACSHA256.authenticationCode(for: Array("guestpass.mail-payload.v1".utf8), key: refreshTokenKey)
    }

    /// A new code of `length` digits and link token for app `app`, hashed and sealed.
    func issue(length: Int, app: UUID) throws -> MailCode {
        let code = try SecureRandom.digits(length)
        let link = Base64URL.encode(try SecureRandom.bytes(32))
        let payload = try AESGCM.seal(
            Array(#"{"code":"\#(code)","link":"\#(link)"}"#.utf8), key: self.sealKey, associatedData: Array(app.lowercasedString.utf8)
        )
        return MailCode(codeHash: self.codeHash(code, app: app), linkHash: Self.linkHash(link), payload: payload)
    }

    /// What the database keeps of code `code` of app `app`.
    func codeHash(_ code: String, app: UUID) -> String {
        Digest.hex(HMACSHA256.authenticationCode(for: Array("\(app.lowercasedString):\(code)".utf8), key: self.codeKey))
    }

    /// What the database keeps of a link token (or of a PKCE authorization code).
    static func linkHash(_ token: String) -> String {
        Digest.sha256Hex(token)
    }

    /// The code and link token sealed in `payload` for `app`, or nil when it does not open.
    func open(_ payload: [UInt8], app: UUID) -> (code: String, link: String)? {
        guard let plain = AESGCM.open(payload, key: self.sealKey, associatedData: Array(app.lowercasedString.utf8)),
            let object = try? JSONSerialization.jsonObject(with: Data(plain)) as? [String: String],
            let code = object["code"], let link = object["link"]
        else { return nil }
        return (code, link)
    }
}

/// The AES-256-GCM key that seals each app's SMTP password at rest (`guestpass apps configure --smtp-password`, opened
/// by the mail sender), bound to the app; derived like `EmailCodeIssuer`'s keys.
public struct SMTPPasswordSealer: Sendable {
    private let key: [UInt8]

    public init(refreshTokenKey: [UInt8]) {
        self.key = HMACSHA256.authenticationCode(for: Array("guestpass.smtp-password.v1".utf8), key: refreshTokenKey)
    }

    /// `password` sealed for app `app`.
    public func seal(_ password: String, app: UUID) throws -> [UInt8] {
        try AESGCM.seal(Array(password.utf8), key: self.key, associatedData: Array("smtp:\(app.lowercasedString)".utf8))
    }

    /// The password sealed in `box` for app `app`, or nil.
    public func open(_ box: [UInt8], app: UUID) -> String? {
        AESGCM.open(box, key: self.key, associatedData: Array("smtp:\(app.lowercasedString)".utf8)).map { String(decoding: $0, as: UTF8.self) }
    }
}

// Keys never reach a log, however a value holding them is printed (`print`, `dump`, string interpolation).
extension EmailCodeIssuer: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    var description: String { "EmailCodeIssuer" }
    var debugDescription: String { self.description }
    var customMirror: Mirror { Mirror(self, children: []) }
}

extension SMTPPasswordSealer: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "SMTPPasswordSealer" }
    public var debugDescription: String { self.description }
    public var customMirror: Mirror { Mirror(self, children: []) }
}
