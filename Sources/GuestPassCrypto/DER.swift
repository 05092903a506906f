/// The few DER constructions needed to hand public keys to `d2i_PUBKEY` (X.690), so that keys built from
/// JWK members never go through pointer-retaining `OSSL_PARAM_BLD` calls.
enum DER {
    /// `SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) }` up to the point itself.
    private static let p256SubjectPublicKeyInfoPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
        0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// `AlgorithmIdentifier { rsaEncryption, NULL }`.
    private static let rsaEncryptionAlgorithm: [UInt8] = [
        0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00,
    ]

    /// The SubjectPublicKeyInfo of the P-256 point (x, y), each coordinate 32 bytes.
    static func p256SubjectPublicKeyInfo(x: [UInt8], y: [UInt8]) -> [UInt8] {
        precondition(x.count == 32 && y.count == 32)
        return Self.p256SubjectPublicKeyInfoPrefix + [0x04] + x + y
    }

    /// The SubjectPublicKeyInfo of the RSA key with big-endian `modulus` and `exponent`.
    static func rsaSubjectPublicKeyInfo(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        let rsaPublicKey = Self.tagged(0x30, Self.integer(modulus) + Self.integer(exponent))
        return Self.tagged(0x30, Self.rsaEncryptionAlgorithm + Self.tagged(0x03, [0x00] + rsaPublicKey))
    }

    /// A non-negative INTEGER from big-endian magnitude bytes (minimal, with a 0x00 pad when the high bit is set).
    static func integer(_ magnitude: [UInt8]) -> [UInt8] {
        var content = Array(magnitude.drop { $0 == 0 })
        if content.first.map({ $0 & 0x80 != 0 }) ?? true { content.insert(0, at: 0) }
        return Self.tagged(0x02, content)
    }

    /// `tag || length || content` with a definite, minimal length.
    static func tagged(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag] + Self.length(content.count) + content
    }

    private static func length(_ count: Int) -> [UInt8] {
        guard count >= 0x80 else { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var remaining = count
        while remaining > 0 {
            bytes.insert(UInt8(remaining & 0xFF), at: 0)
            remaining >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
