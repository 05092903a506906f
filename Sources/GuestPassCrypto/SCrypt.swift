import COpenSSL

/// The scrypt key-derivation function (RFC 7914) through libcrypto's `EVP_PBE_scrypt`.
///
/// scrypt is memory-hard: one derivation fills `128 · r · N` bytes (N = 2^logN) and reads them back in a
/// data-dependent order, `p` times in sequence (OpenSSL runs the `p` lanes one after the other, reusing that memory, so
/// time grows with `N · r · p` and memory with `N · r` only). The caller owns the cost: this type checks only that the
/// parameters are arithmetically valid and tells libcrypto exactly how much memory the derivation needs (OpenSSL's
/// default ceiling, 32 MiB, would refuse N = 2^15, r = 8). For passwords use `PasswordHash`, which bounds the
/// parameters it accepts.
public enum SCrypt {
    /// Derives `length` bytes from `password` and `salt` with N = 2^`logN`, block size `r` and parallelism `p`.
    ///
    /// - Throws: `PasswordHashError.invalidParameters` when `logN` is not 1–63, `r` or `p` is 0, `r · p` ≥ 2³⁰,
    ///   `length` is not 1–2³⁰ or the memory needed does not fit in 64 bits; `OpenSSLError` when libcrypto refuses
    ///   the rest (for example N ≥ 2^(16·r), RFC 7914's bound) or cannot allocate the memory.
    public static func derive(password: [UInt8], salt: [UInt8], logN: UInt8, r: UInt32, p: UInt32, length: Int) throws -> [UInt8] {
        guard (1...63).contains(logN), r >= 1, p >= 1, UInt64(r) * UInt64(p) < 1 << 30, (1...(1 << 30)).contains(length),
            let memory = Self.memoryNeeded(logN: logN, r: r, p: p)
        else { throw PasswordHashError.invalidParameters }
        var output = [UInt8](repeating: 0, count: length)
        try password.withUnsafeBytes { passwordBytes in
            try salt.withUnsafeBufferPointer { saltBytes in
                try output.withUnsafeMutableBufferPointer { out in
                    try OpenSSL.check(
                        EVP_PBE_scrypt(
                            passwordBytes.baseAddress?.assumingMemoryBound(to: CChar.self), passwordBytes.count,
                            saltBytes.baseAddress, saltBytes.count, 1 << UInt64(logN), UInt64(r), UInt64(p), memory,
                            out.baseAddress, out.count),
                        "EVP_PBE_scrypt")
                }
            }
        }
        return output
    }

    /// The `maxmem` handed to libcrypto: what OpenSSL allocates, `128 · r · (N + 2)` bytes for the working array
    /// and `128 · r · p` for the lanes, plus 64 KiB of slack; nil on overflow.
    static func memoryNeeded(logN: UInt8, r: UInt32, p: UInt32) -> UInt64? {
        let blocks = (UInt64(1) << UInt64(logN)).addingReportingOverflow(2 + UInt64(p))
        let perBlock = UInt64(128) * UInt64(r)
        let bytes = blocks.partialValue.multipliedReportingOverflow(by: perBlock)
        let total = bytes.partialValue.addingReportingOverflow(64 * 1024)
        guard !blocks.overflow, !bytes.overflow, !total.overflow else { return nil }
        return total.partialValue
    }
}
