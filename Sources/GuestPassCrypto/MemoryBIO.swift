import COpenSSL

/// Scoped access to OpenSSL memory BIOs: each BIO is created, used and freed inside one call.
enum MemoryBIO {
    /// The largest PEM document accepted; real keys are a few kilobytes at most.
    static let maximumInputLength = 64 * 1024

    /// Runs `body` with a read-only BIO over `bytes`, valid only during the call.
    static func withReadOnlyBIO<Result>(
        over bytes: [UInt8], _ body: (OpaquePointer) throws -> Result
    ) throws -> Result {
        guard bytes.count <= Self.maximumInputLength else { throw CryptoError.invalidEncoding }
        return try bytes.withUnsafeBytes { buffer in
            let bio = try OpenSSL.check(BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)), "BIO_new_mem_buf")
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    /// Creates a writable BIO, lets `body` write into it, and returns everything written.
    ///
    /// - Parameter secure: use OpenSSL's secure heap (`BIO_s_secmem`), for private key material.
    static func collectingOutput(secure: Bool = false, _ body: (OpaquePointer) throws -> Void) throws -> [UInt8] {
        let bio = try OpenSSL.check(BIO_new(secure ? BIO_s_secmem() : BIO_s_mem()), "BIO_new")
        defer { BIO_free(bio) }
        try body(bio)
        let pending = Int(BIO_ctrl_pending(bio))
        var output = [UInt8](repeating: 0, count: pending)
        let read = output.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
        guard read == pending else { throw OpenSSLError.drainingQueue(operation: "BIO_read") }
        return output
    }
}
