import COpenSSL

/// SHA-256 over data that arrives in pieces (a streamed upload part), through OpenSSL's `EVP_DigestUpdate`.
///
/// Design: a non-copyable value that owns one `EVP_MD_CTX`, freed when the value ends; `finalize()` consumes it, so
/// no update can follow the digest. Not `Sendable`: use it from one task at a time. The same digest as
/// `Digest.sha256` of the concatenated pieces.
public struct SHA256Hasher: ~Copyable {
    private let context: OpaquePointer

    /// A hasher that has seen no bytes yet.
    public init() {
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new: out of memory") }
        precondition(EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1, "EVP_DigestInit_ex(SHA-256) cannot fail")
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(self.context)
    }

    /// Adds `bytes` to the digest.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        precondition(EVP_DigestUpdate(self.context, base, bytes.count) == 1, "EVP_DigestUpdate cannot fail on in-memory input")
    }

    /// Adds `bytes` to the digest.
    public mutating func update(_ bytes: some Collection<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { self.update(UnsafeRawBufferPointer($0)) }
        if done == nil {
            Array(bytes).withUnsafeBytes { self.update($0) }
        }
    }

    /// The SHA-256 digest (32 bytes) of everything added; ends the hasher.
    public consuming func finalize() -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = output.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(self.context, $0.baseAddress, &length) }
        precondition(ok == 1, "EVP_DigestFinal_ex(SHA-256) cannot fail")
        return Array(output.prefix(Int(length)))
    }

    /// The digest as lowercase hex; ends the hasher.
    public consuming func finalizeHex() -> String {
        Digest.hex(self.finalize())
    }
}
