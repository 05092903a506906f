/// Parameters that `SCrypt` or `PasswordHash` refuse before doing any work.
///
/// Descriptions name the problem only; they never include a password or a hash.
public struct PasswordHashError: Error, Hashable, Sendable, CustomStringConvertible {
    private let name: String
    private init(_ name: String) { self.name = name }
    public var description: String { "PasswordHashError(\(self.name))" }

    /// scrypt parameters that are not arithmetically valid (`SCrypt.derive`), or outside the limits that
    /// `PasswordHashParameters.isAccepted` states (`PasswordHash.hash`).
    public static let invalidParameters = PasswordHashError("invalidParameters")
}

/// The scrypt cost of a password hash: N = 2^`logN`, block size `r`, parallelism `p`.
///
/// One hash needs `128 · r · N` bytes of memory and time proportional to `N · r · p`.
public struct PasswordHashParameters: Sendable, Equatable {
    /// The base-2 logarithm of scrypt's CPU/memory cost N.
    public let logN: UInt8
    /// scrypt's block size.
    public let r: UInt32
    /// scrypt's parallelism (OpenSSL computes the lanes one after the other: more time, no more memory).
    public let p: UInt32

    public init(logN: UInt8, r: UInt32, p: UInt32) {
        self.logN = logN
        self.r = r
        self.p = p
    }

    /// N = 2^15, r = 8, p = 1: the first of OWASP's scrypt configurations (Password Storage Cheat Sheet), 32 MiB
    /// (128 · r · N = 128 · 8 · 2^15 bytes) per hash.
    ///
    /// Measured on the 2-core development machine (release build, OpenSSL 3.0, shared with other builds): about 100 ms
    /// per hash or verification (98–134 ms over seven runs). That is under the ~120 ms budget for a sign-in, and caps an
    /// online guessing attack at about ten attempts per second per core before any rate limit. OWASP's equal-strength
    /// alternative, N = 2^14, r = 8, p = 2, measured the same (100–130 ms) for half the memory: it is the one to pass as
    /// `parameters` where 32 MiB per concurrent sign-in is too much (stored hashes then report `needsRehash`).
    public static let standard = PasswordHashParameters(logN: 15, r: 8, p: 1)

    /// The bytes of memory one hash fills: `128 · r · N`.
    public var memoryBytes: Int { 128 * (Int(self.r) << Int(self.logN)) }

    /// Whether `PasswordHash` computes with these parameters, when it makes a hash or meets them in a stored string:
    /// `logN` 10–20, `r` 1–32, `p` 1–16, and together at most 256 MiB per hash (`128 · r · N`) and 16 times the work
    /// of `.standard` (`N · r · p` ≤ 2^22), so that a hostile stored string cannot cost gigabytes or seconds.
    public var isAccepted: Bool {
        guard (10...20).contains(self.logN), (1...32).contains(self.r), (1...16).contains(self.p) else { return false }
        let blockCount = UInt64(self.r) << UInt64(self.logN)
        return 128 * blockCount <= 256 << 20 && blockCount * UInt64(self.p) <= 1 << 22
    }
}

/// The outcome of checking a password against a stored hash.
public enum PasswordVerification: Sendable, Equatable {
    /// The password is right; when `needsRehash`, store `PasswordHash.hash(password)` in place of the old hash (its
    /// parameters differ from the current ones, or it is an imported bcrypt hash).
    case match(needsRehash: Bool)
    /// The password is wrong.
    case mismatch
    /// The stored string is not a hash this type verifies (malformed, an unknown scheme, or parameters outside
    /// `PasswordHashParameters.isAccepted` or a bcrypt cost above 16); nothing was computed.
    case unsupported
}

/// Password hashing for stored credentials: scrypt (over OpenSSL) in a self-describing PHC string, and verification of
/// those and of bcrypt hashes imported from Supabase.
///
/// A hash is `$scrypt$ln=15,r=8,p=1$<salt>$<hash>`: the PHC string format, with a 16-byte random salt and a 32-byte
/// scrypt output in standard base64 (`A–Z a–z 0–9 + /`) without padding. The parameters travel with the hash so that
/// they can be raised later: `verify` reports `needsRehash` for every hash made with other parameters. Parsing is
/// strict (one canonical spelling: parameters in this order, decimal without leading zeros, exact lengths) and bounded.
///
/// Passwords are bytes (normally UTF-8 as the client sent them; no normalization happens here). scrypt accepts any
/// length, so the caller bounds the size of request bodies.
public enum PasswordHash {
    /// The length of the random salt, in bytes.
    static let saltLength = 16
    /// The length of the scrypt output, in bytes.
    static let hashLength = 32
    /// A stored string longer than this is refused before it is looked at (a real one is under 100 characters).
    static let maximumStoredLength = 200

    /// Hashes `password` with a fresh random salt.
    ///
    /// - Throws: `PasswordHashError.invalidParameters` when `parameters` are not `isAccepted`; `OpenSSLError` if the
    ///   random generator or scrypt fails.
    public static func hash(_ password: [UInt8], parameters: PasswordHashParameters = .standard) throws -> String {
        guard parameters.isAccepted else { throw PasswordHashError.invalidParameters }
        let salt = try SecureRandom.bytes(Self.saltLength)
        let digest = try Self.derive(password, salt: salt, parameters: parameters)
        return "$scrypt$ln=\(parameters.logN),r=\(parameters.r),p=\(parameters.p)$\(Self.encode(salt))$\(Self.encode(digest))"
    }

    /// Checks `password` against `stored`, a string made by `hash` or an imported bcrypt hash (`$2a$`, `$2b$`, `$2y$`).
    ///
    /// The digests are compared in constant time. `needsRehash` is true when the stored parameters are not
    /// `parameters`, and always for bcrypt. Never traps on hostile input: anything malformed or too costly is
    /// `.unsupported` before any key derivation runs.
    public static func verify(_ password: [UInt8], against stored: String, parameters: PasswordHashParameters = .standard)
        -> PasswordVerification
    {
        guard stored.utf8.count <= Self.maximumStoredLength else { return .unsupported }
        if BCrypt.isBCrypt(stored) {
            guard let matches = BCrypt.verify(password, against: stored) else { return .unsupported }
            return matches ? .match(needsRehash: true) : .mismatch
        }
        guard let parsed = Self.parse(stored), let digest = try? Self.derive(password, salt: parsed.salt, parameters: parsed.parameters)
        else { return .unsupported }
        return ConstantTime.equals(digest, parsed.hash) ? .match(needsRehash: parsed.parameters != parameters) : .mismatch
    }

    /// A valid hash, under `.standard`, of a random password nobody knows; computed on first use.
    static let dummyHash: String = {
        do {
            return try Self.hash(SecureRandom.bytes(32))
        } catch {
            preconditionFailure("PasswordHash.dummyHash: \(error)")
        }
    }()

    /// Spends the time of a verification under `.standard` and discards the result: call it where an address is
    /// unknown, so that a sign-in answers as slowly for an unknown address as for a wrong password (no timing oracle
    /// on which addresses exist). The first call also computes `dummyHash` (call it once at start-up to keep that off
    /// a request). Accounts still on an imported bcrypt hash take bcrypt's time instead (about half, at cost 10) until
    /// their first sign-in rehashes them.
    public static func verifyDummy(_ password: [UInt8]) {
        _ = Self.verify(password, against: Self.dummyHash)
    }

    private static func derive(_ password: [UInt8], salt: [UInt8], parameters: PasswordHashParameters) throws -> [UInt8] {
        try SCrypt.derive(
            password: password, salt: salt, logN: parameters.logN, r: parameters.r, p: parameters.p, length: Self.hashLength)
    }

    /// A stored scrypt hash, taken apart.
    struct Parsed: Equatable {
        var parameters: PasswordHashParameters
        var salt: [UInt8]
        var hash: [UInt8]
    }

    /// Parses `$scrypt$ln=…,r=…,p=…$<salt>$<hash>` strictly; nil when malformed, when the salt is not 16 bytes or the
    /// hash not 32, or when the parameters are not `isAccepted`.
    static func parse(_ stored: String) -> Parsed? {
        let fields = stored.utf8.split(separator: UInt8(ascii: "$"), omittingEmptySubsequences: false)
        guard fields.count == 5, fields[0].isEmpty, fields[1].elementsEqual("scrypt".utf8) else { return nil }
        let settings = fields[2].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        guard settings.count == 3,
            let logN = Self.number(settings[0], named: "ln"), let r = Self.number(settings[1], named: "r"),
            let p = Self.number(settings[2], named: "p"), logN <= UInt32(UInt8.max)
        else { return nil }
        let parameters = PasswordHashParameters(logN: UInt8(logN), r: r, p: p)
        guard parameters.isAccepted, let salt = Self.decode(fields[3]), salt.count == Self.saltLength,
            let hash = Self.decode(fields[4]), hash.count == Self.hashLength
        else { return nil }
        return Parsed(parameters: parameters, salt: salt, hash: hash)
    }

    /// The value of `name=<decimal>`: 1–4 digits, no sign, no leading zero.
    private static func number(_ setting: Substring.UTF8View, named name: String) -> UInt32? {
        let prefix = Array(name.utf8) + [UInt8(ascii: "=")]
        guard setting.starts(with: prefix) else { return nil }
        let digits = setting.dropFirst(prefix.count)
        guard (1...4).contains(digits.count), digits.first != UInt8(ascii: "0"),
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return digits.reduce(0) { $0 * 10 + UInt32($1 - UInt8(ascii: "0")) }
    }

    /// Standard base64 without padding: base64url with `+` and `/` in place of `-` and `_`.
    private static func encode(_ bytes: [UInt8]) -> String {
        String(String(Base64URL.encode(bytes)).map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
    }

    /// Strict decoding of standard unpadded base64 (canonical trailing bits, no `-`, `_`, `=` or whitespace).
    private static func decode(_ text: Substring.UTF8View) -> [UInt8]? {
        guard !text.contains(UInt8(ascii: "-")), !text.contains(UInt8(ascii: "_")) else { return nil }
        return Base64URL.decode(ascii: text.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: "-") : $0 == UInt8(ascii: "/") ? UInt8(ascii: "_") : $0 })
    }
}
