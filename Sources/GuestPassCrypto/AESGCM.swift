import COpenSSL

/// AES-256-GCM sealing of small secrets the server must keep but never show (Apple's refresh tokens, kept for
/// revocation at account deletion).
///
/// A sealed box is `nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)`, with a random nonce per seal; `associatedData` is
/// authenticated, not encrypted (bind the box to its row, e.g. the user id, so it cannot be moved to another).
public enum AESGCM {
    static let nonceLength = 12
    static let tagLength = 16

    /// Seals `plaintext` under the 32-byte `key`.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws -> [UInt8] {
        guard key.count == 32 else { throw CryptoError.invalidKey }
        let nonce = try SecureRandom.bytes(Self.nonceLength)
        let context = try OpenSSL.check(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new")
        defer { EVP_CIPHER_CTX_free(context) }
        try OpenSSL.check(EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce), "EVP_EncryptInit_ex")
        var length: Int32 = 0
        if !associatedData.isEmpty {
            try OpenSSL.check(
                EVP_EncryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)), "EVP_EncryptUpdate")
        }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        try OpenSSL.check(EVP_EncryptUpdate(context, &ciphertext, &length, plaintext, Int32(plaintext.count)), "EVP_EncryptUpdate")
        var total = Int(length)
        try ciphertext.withUnsafeMutableBufferPointer { buffer in
            try OpenSSL.check(EVP_EncryptFinal_ex(context, buffer.baseAddress! + total, &length), "EVP_EncryptFinal_ex")
        }
        total += Int(length)
        var tag = [UInt8](repeating: 0, count: Self.tagLength)
        try OpenSSL.check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagLength), &tag), "EVP_CTRL_GCM_GET_TAG")
        return nonce + ciphertext.prefix(total) + tag
    }

    /// Opens a box made by `seal` with the same key and associated data; nil when it was altered or the key or the
    /// associated data differ.
    public static func open(_ box: [UInt8], key: [UInt8], associatedData: [UInt8] = []) -> [UInt8]? {
        guard key.count == 32, box.count >= Self.nonceLength + Self.tagLength, let context = EVP_CIPHER_CTX_new() else {
            OpenSSL.discardErrors()
            return nil
        }
        defer { EVP_CIPHER_CTX_free(context) }
        let nonce = Array(box.prefix(Self.nonceLength))
        let ciphertext = Array(box.dropFirst(Self.nonceLength).dropLast(Self.tagLength))
        var tag = Array(box.suffix(Self.tagLength))
        var length: Int32 = 0
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1,
            associatedData.isEmpty
                || EVP_DecryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1,
            EVP_DecryptUpdate(context, &plaintext, &length, ciphertext, Int32(ciphertext.count)) == 1
        else {
            OpenSSL.discardErrors()
            return nil
        }
        let total = Int(length)
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagLength), &tag) == 1,
            plaintext.withUnsafeMutableBufferPointer({ EVP_DecryptFinal_ex(context, $0.baseAddress! + total, &length) }) == 1
        else {
            OpenSSL.discardErrors()
            return nil
        }
        return Array(plaintext.prefix(total + Int(length)))
    }
}
