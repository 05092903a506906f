import COpenSSL

/// One-shot message digests over OpenSSL's EVP interface.
public enum Digest {
    /// The SHA-256 digest of `bytes` (32 bytes).
    public static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = Array(bytes).withUnsafeBytes { input in
            output.withUnsafeMutableBufferPointer { out in
                EVP_Digest(input.baseAddress, input.count, out.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        precondition(ok == 1, "EVP_Digest(SHA-256) cannot fail on in-memory input")
        return Array(output.prefix(Int(length)))
    }

    /// The SHA-256 digest of the UTF-8 bytes of `text`, as lowercase hex.
    public static func sha256Hex(_ text: String) -> String {
        hex(sha256(Array(text.utf8)))
    }

    /// The SHA-256 digest of `bytes`, as lowercase hex.
    public static func sha256Hex(_ bytes: some Collection<UInt8>) -> String {
        hex(sha256(bytes))
    }

    /// Lowercase hexadecimal of `bytes`.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: 2 * bytes.count) { out in
            var index = 0
            for byte in bytes {
                out[index] = Self.hexDigit(byte >> 4)
                out[index + 1] = Self.hexDigit(byte & 0x0f)
                index += 2
            }
            return index
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10 }
}
