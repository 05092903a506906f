import COpenSSL

/// The sole owner of one `EVP_PKEY`, freed in `deinit`.
///
/// `@unchecked Sendable`: the handle is never mutated after `init`, every operation creates its own
/// `EVP_MD_CTX`/`EVP_PKEY_CTX`, and OpenSSL 3 documents an `EVP_PKEY` as safe for concurrent use by several
/// threads as long as none modifies it (openssl-threads(7)). The pointer never leaves this type: every libcrypto
/// call that needs it is a method here.
final class EVPKey: @unchecked Sendable {
    private let pointer: OpaquePointer

    /// Takes ownership of `pointer`: it is freed when this object is, whatever happens afterwards.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(self.pointer)
    }

    // MARK: Inspection

    /// `EVP_PKEY_EC`, `EVP_PKEY_RSA`, ...
    var baseID: Int32 { EVP_PKEY_get_base_id(self.pointer) }

    /// The key size in bits (modulus size for RSA, group order size for EC).
    var bits: Int { Int(EVP_PKEY_get_bits(self.pointer)) }

    /// The maximum signature size in bytes.
    var maximumSignatureSize: Int { Int(EVP_PKEY_get_size(self.pointer)) }

    /// The EC group's short name (`prime256v1` for P-256), or nil for keys without a named group.
    var groupName: String? {
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        let ok = buffer.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_group_name(self.pointer, $0.baseAddress, $0.count, &length)
        }
        guard ok == 1 else {
            OpenSSL.discardErrors()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A big-number parameter (`qx`, `n`, ...) as big-endian bytes, left-padded to `width` if given.
    func bignumParameter(_ name: String, width: Int? = nil) throws -> [UInt8] {
        var bignum: OpaquePointer?
        try OpenSSL.check(EVP_PKEY_get_bn_param(self.pointer, name, &bignum), "EVP_PKEY_get_bn_param(\(name))")
        let value = try OpenSSL.check(bignum, "EVP_PKEY_get_bn_param(\(name))")
        defer { BN_free(value) }
        let size = width ?? (Int(BN_num_bits(value)) + 7) / 8
        var bytes = [UInt8](repeating: 0, count: size)
        let written = bytes.withUnsafeMutableBufferPointer { BN_bn2binpad(value, $0.baseAddress, Int32(size)) }
        guard written == size else { throw OpenSSLError.drainingQueue(operation: "BN_bn2binpad") }
        return bytes
    }

    /// Runs libcrypto's public-key validation (point on curve and not at infinity; RSA modulus and exponent sanity).
    func checkPublicKey() throws {
        let context = try OpenSSL.check(EVP_PKEY_CTX_new_from_pkey(nil, self.pointer, nil), "EVP_PKEY_CTX_new_from_pkey")
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_public_check(context) == 1 else {
            OpenSSL.discardErrors()
            throw CryptoError.invalidKey
        }
    }

    // MARK: Loading and exporting

    /// Parses a DER `SubjectPublicKeyInfo`, rejecting trailing bytes.
    static func fromSubjectPublicKeyInfo(_ der: [UInt8]) throws -> EVPKey {
        try der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            let key = try OpenSSL.check(d2i_PUBKEY(nil, &cursor, buffer.count), "d2i_PUBKEY")
            let owner = EVPKey(taking: key)
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else { throw CryptoError.invalidEncoding }
            return owner
        }
    }

    /// Parses a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) block.
    static func fromPublicKeyPEM(_ pem: String) throws -> EVPKey {
        try MemoryBIO.withReadOnlyBIO(over: Array(pem.utf8)) { bio in
            EVPKey(taking: try OpenSSL.check(PEM_read_bio_PUBKEY(bio, nil, nil, nil), "PEM_read_bio_PUBKEY"))
        }
    }

    /// Parses an unencrypted PEM private key: PKCS#8 `PRIVATE KEY` or a traditional form such as `EC PRIVATE KEY`.
    ///
    /// The passphrase callback always declines, so an encrypted key fails instead of prompting on the terminal.
    static func fromPrivateKeyPEM(_ pem: String) throws -> EVPKey {
        try MemoryBIO.withReadOnlyBIO(over: Array(pem.utf8)) { bio in
            let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            return EVPKey(taking: try OpenSSL.check(key, "PEM_read_bio_PrivateKey"))
        }
    }

    /// Generates a fresh key of `type` (e.g. `EC`) on the named group (e.g. `P-256`).
    static func generate(type: String, group: String) throws -> EVPKey {
        let context = try OpenSSL.check(EVP_PKEY_CTX_new_from_name(nil, type, nil), "EVP_PKEY_CTX_new_from_name")
        defer { EVP_PKEY_CTX_free(context) }
        try OpenSSL.check(EVP_PKEY_keygen_init(context), "EVP_PKEY_keygen_init")
        try OpenSSL.check(EVP_PKEY_CTX_set_group_name(context, group), "EVP_PKEY_CTX_set_group_name")
        var key: OpaquePointer?
        try OpenSSL.check(EVP_PKEY_generate(context, &key), "EVP_PKEY_generate")
        return EVPKey(taking: try OpenSSL.check(key, "EVP_PKEY_generate"))
    }

    /// Generates a fresh RSA key of `bits` bits (public exponent 65537).
    static func generateRSA(bits: Int) throws -> EVPKey {
        let context = try OpenSSL.check(EVP_PKEY_CTX_new_from_name(nil, "RSA", nil), "EVP_PKEY_CTX_new_from_name")
        defer { EVP_PKEY_CTX_free(context) }
        try OpenSSL.check(EVP_PKEY_keygen_init(context), "EVP_PKEY_keygen_init")
        try OpenSSL.check(EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)), "EVP_PKEY_CTX_set_rsa_keygen_bits")
        var key: OpaquePointer?
        try OpenSSL.check(EVP_PKEY_generate(context, &key), "EVP_PKEY_generate")
        return EVPKey(taking: try OpenSSL.check(key, "EVP_PKEY_generate"))
    }

    /// The private key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    func privateKeyPKCS8PEM() throws -> String {
        let bytes = try MemoryBIO.collectingOutput(secure: true) { bio in
            try OpenSSL.check(
                PEM_write_bio_PKCS8PrivateKey(bio, self.pointer, nil, nil, 0, nil, nil), "PEM_write_bio_PKCS8PrivateKey")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The public key as PEM `SubjectPublicKeyInfo` (`-----BEGIN PUBLIC KEY-----`).
    func publicKeyPEM() throws -> String {
        let bytes = try MemoryBIO.collectingOutput { bio in
            try OpenSSL.check(PEM_write_bio_PUBKEY(bio, self.pointer), "PEM_write_bio_PUBKEY")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Signatures (SHA-256)

    /// Signs `message` with SHA-256 through `EVP_DigestSign`; ECDSA output is DER, RSA output is PKCS#1 v1.5.
    func signSHA256(_ message: [UInt8]) throws -> [UInt8] {
        let context = try OpenSSL.check(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
        defer { EVP_MD_CTX_free(context) }
        try OpenSSL.check(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, self.pointer), "EVP_DigestSignInit")
        var length = 0
        try OpenSSL.check(EVP_DigestSign(context, nil, &length, message, message.count), "EVP_DigestSign")
        var signature = [UInt8](repeating: 0, count: length)
        try OpenSSL.check(EVP_DigestSign(context, &signature, &length, message, message.count), "EVP_DigestSign")
        return Array(signature.prefix(length))
    }

    /// Whether `signature` (DER for ECDSA) is valid for `message` under SHA-256.
    ///
    /// `EVP_DigestVerify` returns 1 for valid, 0 for a bad signature and a negative value for malformed input:
    /// only 1 counts, and the error queue is emptied on every other outcome.
    func verifySHA256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else {
            OpenSSL.discardErrors()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, self.pointer) == 1,
            EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
        else {
            OpenSSL.discardErrors()
            return false
        }
        return true
    }
}
