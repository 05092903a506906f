import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG (`RAND_bytes`).
public enum SecureRandom {
    /// Returns `count` random bytes.
    ///
    /// - Throws: `OpenSSLError` if the generator is not (or no longer) properly seeded.
    public static func bytes(_ count: Int) throws -> [UInt8] {
        precondition(count >= 0 && count <= Int(Int32.max), "SecureRandom.bytes: count out of range")
        var output = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return output }
        try output.withUnsafeMutableBufferPointer { buffer in
            try OpenSSL.check(RAND_bytes(buffer.baseAddress, Int32(count)), "RAND_bytes")
        }
        return output
    }
}
