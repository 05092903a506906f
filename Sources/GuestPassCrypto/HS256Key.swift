/// A shared secret for HS256 (HMAC-SHA256) tokens.
///
/// Keys are at least 32 bytes (256 bits, RFC 7518 §3.2 and RFC 8725 §3.5: never a password). The secret is
/// never published in a JWKS, and its `description` never shows it.
public struct HS256Key: Sendable, CustomStringConvertible {
    /// The minimum and generated secret length, in bytes.
    public static let minimumByteCount = 32

    let secret: [UInt8]

    /// Wraps an existing secret of at least 32 bytes.
    ///
    /// - Throws: `CryptoError.keyTooSmall` for shorter secrets.
    public init(secret: some Collection<UInt8>) throws {
        let secret = Array(secret)
        guard secret.count >= Self.minimumByteCount else { throw CryptoError.keyTooSmall }
        self.secret = secret
    }

    /// Generates a new random 32-byte secret.
    public static func generate() throws -> HS256Key {
        try HS256Key(secret: SecureRandom.bytes(Self.minimumByteCount))
    }

    /// The HMAC-SHA256 tag of `message`.
    public func authenticationCode(for message: some Collection<UInt8>) -> [UInt8] {
        HMACSHA256.authenticationCode(for: message, key: self.secret)
    }

    /// Whether `code` is the tag of `message`, compared in constant time.
    public func isValidAuthenticationCode(_ code: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        HMACSHA256.isValidAuthenticationCode(code, for: message, key: self.secret)
    }

    /// Runs `body` with the raw secret, e.g. to store it. The bytes must be treated as a secret.
    public func withUnsafeSecret<Result>(_ body: ([UInt8]) throws -> Result) rethrows -> Result {
        try body(self.secret)
    }

    public var description: String { "HS256Key(<redacted>)" }
}
