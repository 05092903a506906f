import COpenSSL

/// HMAC-SHA256 (RFC 2104) through libcrypto's one-shot `HMAC()`.
public enum HMACSHA256 {
    /// The size of an HMAC-SHA256 tag, in bytes.
    public static let byteCount = 32

    /// Computes the 32-byte HMAC-SHA256 of `message` under `key`.
    public static func authenticationCode(for message: some Collection<UInt8>, key: some Collection<UInt8>) -> [UInt8] {
        Self.code(EVP_sha256(), length: 32, message: Array(message), key: Array(key))
    }

    /// The HMAC of `message` under `key` with digest `digest` (libcrypto's one-shot `HMAC()`), `length` bytes long:
    /// the one HMAC call of the module (SHA-256 here, SHA-1 for `TOTP`).
    static func code(_ digest: OpaquePointer?, length: Int, message: [UInt8], key: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var written: UInt32 = 0
        let result = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                output.withUnsafeMutableBufferPointer { out in
                    HMAC(digest, keyBytes.baseAddress, Int32(keyBytes.count), messageBytes.baseAddress, messageBytes.count, out.baseAddress, &written)
                }
            }
        }
        precondition(result != nil && Int(written) == length, "HMAC cannot fail on in-memory input")
        return Array(output.prefix(length))
    }

    /// Whether `code` is the HMAC-SHA256 of `message` under `key`, compared in constant time.
    public static func isValidAuthenticationCode(
        _ code: some Collection<UInt8>, for message: some Collection<UInt8>, key: some Collection<UInt8>
    ) -> Bool {
        ConstantTime.equals(code, Self.authenticationCode(for: message, key: key))
    }
}

/// Comparisons whose running time does not depend on where secret inputs differ.
public enum ConstantTime {
    /// Whether `lhs` and `rhs` are equal, via `CRYPTO_memcmp`.
    ///
    /// Only the lengths may leak through timing (a length mismatch returns early); the contents never do.
    public static func equals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
        let lhs = Array(lhs)
        let rhs = Array(rhs)
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0 }
        }
    }
}
