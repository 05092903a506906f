import COpenSSL

/// A failure reported by OpenSSL's libcrypto, with the thread's error queue drained at the point of failure.
///
/// The reason strings come from `ERR_error_string_n` and name the library, function and reason only: they never
/// contain key material or the data being processed.
public struct OpenSSLError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The libcrypto call that failed, e.g. `EVP_DigestSign`.
    public let operation: String
    /// The packed error codes taken from OpenSSL's queue, oldest first (may be empty).
    public let codes: [UInt]

    /// One human-readable reason per entry of `codes`.
    public var reasons: [String] { self.codes.map(Self.reasonString) }

    public var description: String {
        let reasons = self.reasons
        return reasons.isEmpty
            ? "OpenSSLError(\(self.operation))" : "OpenSSLError(\(self.operation)): \(reasons.joined(separator: "; "))"
    }

    /// Drains the calling thread's OpenSSL error queue into a new error for `operation`.
    static func drainingQueue(operation: String) -> OpenSSLError {
        var codes: [UInt] = []
        var code = ERR_get_error()
        while code != 0 {
            codes.append(code)
            code = ERR_get_error()
        }
        return OpenSSLError(operation: operation, codes: codes)
    }

    private static func reasonString(_ code: UInt) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let text = buffer.withUnsafeMutableBufferPointer { buffer in
            ERR_error_string_n(code, buffer.baseAddress, buffer.count)
            return String(cString: buffer.baseAddress!)
        }
        return text
    }
}

/// The single checker through which every libcrypto return value passes.
///
/// libcrypto reports success as `1` (or a non-null pointer); anything else drains the error queue into an
/// `OpenSSLError` so that no stale entry leaks into a later, unrelated call on the same thread.
enum OpenSSL {
    /// Throws unless `result` is libcrypto's success value, `1`.
    static func check(_ result: Int32, _ operation: String) throws(OpenSSLError) {
        guard result == 1 else { throw OpenSSLError.drainingQueue(operation: operation) }
    }

    /// Returns `value`, or throws if libcrypto returned null.
    static func check<Value>(_ value: Value?, _ operation: String) throws(OpenSSLError) -> Value {
        guard let value else { throw OpenSSLError.drainingQueue(operation: operation) }
        return value
    }

    /// Empties the error queue after an expected failure (a bad signature), which is reported as `false`, not thrown.
    static func discardErrors() {
        ERR_clear_error()
    }
}
