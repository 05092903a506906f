import COpenSSL
public import Foundation

/// Time-based one-time passwords (RFC 6238) as authenticator apps make them: HMAC-SHA1 (RFC 4226's dynamic
/// truncation), 6 digits, 30-second steps from the Unix epoch. `verify` accepts the current step and one either side
/// (a phone's clock drifts, and a code typed at a step's end arrives in the next), compared in constant time.
public enum TOTP {
    /// Seconds per step.
    public static let step: Int64 = 30
    /// Digits per code.
    public static let digits = 6
    /// Bytes of a new secret (160 bits, RFC 4226's recommendation).
    public static let secretByteCount = 20

    /// A new random secret.
    public static func newSecret() throws -> [UInt8] { try SecureRandom.bytes(Self.secretByteCount) }

    /// The code of `secret` for step `counter` (RFC 4226 HOTP).
    public static func code(secret: [UInt8], counter: UInt64, digits: Int = TOTP.digits) -> String {
        var message = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { message[index] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64(index))) }
        let digest = Self.hmacSHA1(key: secret, message: message)
        let offset = Int(digest[digest.count - 1] & 0x0f)
        let binary =
            (UInt32(digest[offset] & 0x7f) << 24) | (UInt32(digest[offset + 1]) << 16) | (UInt32(digest[offset + 2]) << 8)
            | UInt32(digest[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let text = String(binary % modulus)
        return String(repeating: "0", count: digits - text.count) + text
    }

    /// The code of `secret` at `date`.
    public static func code(secret: [UInt8], at date: Date) -> String {
        Self.code(secret: secret, counter: Self.counter(at: date))
    }

    /// Whether `code` (digits only; spaces are ignored) is the code of `secret` at `date`, or of the step before or after.
    public static func verify(_ code: String, secret: [UInt8], at date: Date) -> Bool {
        Self.matchingStep(code, secret: secret, at: date) != nil
    }

    /// The step whose code `code` is (the one at `date`, or the step before or after), or nil. A caller that keeps the
    /// last step used refuses a code of a step not after it: a code is then good once (RFC 6238 section 5.2).
    public static func matchingStep(_ code: String, secret: [UInt8], at date: Date) -> UInt64? {
        let typed = Array(code.filter { $0 != " " }.utf8)
        guard typed.count == Self.digits, typed.allSatisfy({ (0x30...0x39).contains($0) }), !secret.isEmpty else { return nil }
        let counter = Self.counter(at: date)
        var matched: UInt64?
        for candidate in [counter &- 1, counter, counter &+ 1] {
            // Every candidate is compared, so the time does not tell which step matched.
            if ConstantTime.equals(typed, Array(Self.code(secret: secret, counter: candidate).utf8)) { matched = candidate }
        }
        return matched
    }

    /// `otpauth://totp/<issuer>:<account>?secret=<base32>&issuer=<issuer>&algorithm=SHA1&digits=6&period=30`, the URI an
    /// authenticator app scans (Google Authenticator's key URI format).
    public static func otpauthURI(secret: [UInt8], account: String, issuer: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~@")
        let label = "\(issuer):\(account)".addingPercentEncoding(withAllowedCharacters: allowed.union(CharacterSet(charactersIn: ":"))) ?? account
        let encodedIssuer = issuer.addingPercentEncoding(withAllowedCharacters: allowed) ?? issuer
        return
            "otpauth://totp/\(label)?secret=\(Base32.encode(secret))&issuer=\(encodedIssuer)&algorithm=SHA1&digits=\(Self.digits)&period=\(Self.step)"
    }

    static func counter(at date: Date) -> UInt64 {
        UInt64(max(0, Int64(date.timeIntervalSince1970.rounded(.down)) / Self.step))
    }

    static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        HMACSHA256.code(EVP_sha1(), length: 20, message: message, key: key)
    }
}

/// Base32 (RFC 4648 section 6): the alphabet of TOTP secrets in otpauth URIs.
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// `bytes` in upper-case base32, without padding (as otpauth URIs carry it).
    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                output.append(Self.alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(Self.alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of base32 `text` (either case, padding optional), or nil when it is not base32.
    public static func decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        let trimmed = text.utf8.reversed().drop { $0 == UInt8(ascii: "=") }.reversed()
        for character in trimmed {
            let upper = (0x61...0x7a).contains(character) ? character - 0x20 : character
            guard let value = Self.alphabet.firstIndex(of: upper) else { return nil }
            buffer = (buffer << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                output.append(UInt8((buffer >> UInt32(bits - 8)) & 0xff))
                bits -= 8
            }
        }
        return output
    }
}
