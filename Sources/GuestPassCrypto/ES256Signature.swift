import COpenSSL

/// An ECDSA P-256 signature in JOSE form: `R ‖ S`, each 32 bytes big-endian, left-padded (RFC 7518 §3.4).
///
/// OpenSSL produces and consumes DER `ECDSA-Sig-Value` (70–72 bytes); this type converts between the two.
/// Tokens carry only the raw form: a DER signature inside a JWS is invalid.
public struct ES256Signature: Hashable, Sendable {
    /// The 64-byte `R ‖ S` value.
    public let rawRepresentation: [UInt8]

    /// Wraps a JOSE `R ‖ S` value.
    ///
    /// - Throws: `CryptoError.invalidSignatureEncoding` unless `raw` is exactly 64 bytes.
    public init(rawRepresentation raw: some Collection<UInt8>) throws {
        let raw = Array(raw)
        guard raw.count == 64 else { throw CryptoError.invalidSignatureEncoding }
        self.rawRepresentation = raw
    }

    /// Converts a DER `ECDSA-Sig-Value` to `R ‖ S`.
    ///
    /// - Throws: `CryptoError.invalidSignatureEncoding` for anything but canonical DER with no trailing bytes
    ///   whose integers fit in 32 bytes.
    public init(derRepresentation der: some Collection<UInt8>) throws {
        let der = Array(der)
        let raw = try der.withUnsafeBufferPointer { buffer -> [UInt8] in
            var cursor = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else {
                OpenSSL.discardErrors()
                throw CryptoError.invalidSignatureEncoding
            }
            defer { ECDSA_SIG_free(signature) }
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else {
                throw CryptoError.invalidSignatureEncoding
            }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(signature, &r, &s)
            var raw = [UInt8](repeating: 0, count: 64)
            let written = raw.withUnsafeMutableBufferPointer { out in
                (BN_bn2binpad(r, out.baseAddress, 32), BN_bn2binpad(s, out.baseAddress! + 32, 32))
            }
            guard written == (32, 32) else {
                OpenSSL.discardErrors()
                throw CryptoError.invalidSignatureEncoding
            }
            return raw
        }
        self.rawRepresentation = raw
        // Round trip: only the canonical DER encoding of (r, s) is accepted.
        guard try self.derRepresentation == der else { throw CryptoError.invalidSignatureEncoding }
    }

    /// The signature as DER `ECDSA-Sig-Value`, the form `EVP_DigestVerify` expects.
    public var derRepresentation: [UInt8] {
        get throws {
            let signature = try OpenSSL.check(ECDSA_SIG_new(), "ECDSA_SIG_new")
            defer { ECDSA_SIG_free(signature) }
            let (r, s) = self.rawRepresentation.withUnsafeBufferPointer { raw in
                (BN_bin2bn(raw.baseAddress, 32, nil), BN_bin2bn(raw.baseAddress! + 32, 32, nil))
            }
            guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
                // On success ECDSA_SIG_set0 takes ownership of r and s; on failure they are still ours.
                BN_free(r)
                BN_free(s)
                throw OpenSSLError.drainingQueue(operation: "ECDSA_SIG_set0")
            }
            var output: UnsafeMutablePointer<UInt8>?
            let length = i2d_ECDSA_SIG(signature, &output)
            guard length > 0, let output else { throw OpenSSLError.drainingQueue(operation: "i2d_ECDSA_SIG") }
            defer { CRYPTO_free(output, #fileID, #line) }
            return Array(UnsafeBufferPointer(start: output, count: Int(length)))
        }
    }

    /// Whether either half is all zeros (r = 0 or s = 0 is never valid; CVE-2022-21449 "psychic signatures").
    var hasZeroHalf: Bool {
        self.rawRepresentation[..<32].allSatisfy { $0 == 0 } || self.rawRepresentation[32...].allSatisfy { $0 == 0 }
    }
}
