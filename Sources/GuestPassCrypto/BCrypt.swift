/// bcrypt verification (Provos and Mazières, 1999), pure Swift, for the password hashes imported from a Supabase
/// (GoTrue) project: `$2a$10$<22 characters of salt><31 characters of hash>`.
///
/// Only verification is offered to the rest of the service: new hashes are scrypt (`PasswordHash`), and a bcrypt hash
/// that verifies is reported as needing a rehash. OpenSSL 3 has no bcrypt and keeps Blowfish in its legacy provider, so
/// EksBlowfish is written here over `BlowfishConstants`.
///
/// Behaviour, as OpenBSD's `bcrypt(3)` revision `2b` and Go's `x/crypto/bcrypt` (which made the imported hashes):
/// - `$2a$`, `$2b$` and `$2y$` are all computed as `2b`, as OpenBSD and Go do. (The labels mark bugs of other
///   implementations: OpenBSD's old `2a` wrapped the length of passwords of 255 bytes and more, and crypt_blowfish's
///   `2a` applies a countermeasure to some passwords with bytes ≥ 0x80, e.g. `ff ff a3`, whose `2a` hashes made there
///   therefore do not verify here; Go never did either.)
/// - the key is the password's first 72 bytes followed by a NUL byte (so bytes after the 72nd are ignored, and the NUL
///   is used only by passwords shorter than 72 bytes); a NUL inside the password is kept as a byte, as Go does;
/// - salt and hash use bcrypt's own radix-64 alphabet `./A-Za-z0-9`; the salt's 4 unused trailing bits are ignored, as
///   every implementation does, and the hash is compared as its 31 characters in constant time.
///
/// Costs 4–31 are valid bcrypt, but `verify` refuses costs above `maximumCost` (16, i.e. 2¹⁶ EksBlowfish rounds,
/// about 64 times a cost-10 hash, which takes about 55 ms in a release build here) so that a hostile stored hash cannot buy minutes of CPU.
enum BCrypt {
    /// The highest cost `verify` accepts.
    static let maximumCost = 16

    /// The password bytes used: bcrypt's key schedule reads 18 words (72 bytes) of the key.
    static let maximumPasswordLength = 72

    /// bcrypt's radix-64 alphabet (not RFC 4648's order).
    private static let alphabet = Array("./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// Maps an ASCII byte to its 6-bit value in `alphabet`, or 0xFF.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        return table
    }()

    /// A parsed `$2x$NN$<salt><hash>` string.
    struct Stored: Equatable {
        /// The base-2 logarithm of the number of EksBlowfish rounds, 4–31.
        var cost: Int
        /// The 16-byte salt.
        var salt: [UInt8]
        /// The 31 characters of the encoded hash, as ASCII.
        var encodedHash: [UInt8]
    }

    /// Whether `stored` claims to be a bcrypt hash (`$2a$`, `$2b$` or `$2y$`), well formed or not.
    static func isBCrypt(_ stored: String) -> Bool {
        let bytes = Array(stored.utf8.prefix(4))
        return bytes.count == 4 && bytes[0] == UInt8(ascii: "$") && bytes[1] == UInt8(ascii: "2")
            && [UInt8(ascii: "a"), UInt8(ascii: "b"), UInt8(ascii: "y")].contains(bytes[2]) && bytes[3] == UInt8(ascii: "$")
    }

    /// Parses a 60-character bcrypt string; nil unless it is exactly `$2a$`/`$2b$`/`$2y$`, two decimal digits of cost
    /// in 04–31, `$`, 22 salt and 31 hash characters of bcrypt's alphabet.
    static func parse(_ stored: String) -> Stored? {
        let bytes = Array(stored.utf8.prefix(61))
        guard bytes.count == 60, Self.isBCrypt(stored), bytes[6] == UInt8(ascii: "$") else { return nil }
        let tens = bytes[4] &- UInt8(ascii: "0")
        let units = bytes[5] &- UInt8(ascii: "0")
        guard tens < 10, units < 10 else { return nil }
        let cost = Int(tens) * 10 + Int(units)
        guard (4...31).contains(cost), bytes[7...].allSatisfy({ Self.values[Int($0)] != 0xFF }) else { return nil }
        return Stored(cost: cost, salt: Self.decode(bytes[7..<29], count: 16), encodedHash: Array(bytes[29...]))
    }

    /// Checks `password` against a bcrypt string: true or false, or nil when the string is not bcrypt as `parse`
    /// accepts it or its cost is above `maximumCost` (no work is done then).
    static func verify(_ password: [UInt8], against stored: String) -> Bool? {
        guard let parsed = Self.parse(stored), parsed.cost <= Self.maximumCost else { return nil }
        let computed = Self.encode(Self.hash(password, salt: parsed.salt, cost: parsed.cost))
        return ConstantTime.equals(computed, parsed.encodedHash)
    }

    /// The full `$2b$NN$…` string for `password`, `salt` (16 bytes) and `cost` (4–31). For tests and cross-checks; the
    /// service never creates bcrypt hashes.
    static func string(_ password: [UInt8], salt: [UInt8], cost: Int, version: Character = "b") -> String {
        precondition(salt.count == 16 && (4...31).contains(cost), "BCrypt.string: salt must be 16 bytes, cost 4...31")
        let costText = cost < 10 ? "0\(cost)" : "\(cost)"
        let salt22 = String(decoding: Self.encode(salt), as: UTF8.self)
        let hash31 = String(decoding: Self.encode(Self.hash(password, salt: salt, cost: cost)), as: UTF8.self)
        return "$2\(version)$\(costText)$\(salt22)\(hash31)"
    }

    /// The 23 bytes of bcrypt's output (the 24th byte of the last ciphertext word is dropped, as every implementation
    /// does).
    static func hash(_ password: [UInt8], salt: [UInt8], cost: Int) -> [UInt8] {
        precondition(salt.count == 16 && (4...31).contains(cost), "BCrypt.hash: salt must be 16 bytes, cost 4...31")
        let key = Array(password.prefix(Self.maximumPasswordLength)) + [0]
        var state = EksBlowfish()
        state.expand(key: key, salt: salt)
        for _ in 0..<(1 << cost) {
            state.expand(key: key)
            state.expand(key: salt)
        }
        var words = Self.stream(Array("OrpheanBeholderScryDoubt".utf8))
        for _ in 0..<64 {
            for block in stride(from: 0, to: words.count, by: 2) {
                (words[block], words[block + 1]) = state.encrypt(words[block], words[block + 1])
            }
        }
        var output = [UInt8]()
        output.reserveCapacity(24)
        for word in words {
            for shift: UInt32 in [24, 16, 8, 0] { output.append(UInt8(truncatingIfNeeded: word >> shift)) }
        }
        return Array(output.prefix(23))
    }

    /// Big-endian 32-bit words of `bytes` (whose count is a multiple of 4).
    private static func stream(_ bytes: [UInt8]) -> [UInt32] {
        stride(from: 0, to: bytes.count, by: 4).map { index in
            UInt32(bytes[index]) << 24 | UInt32(bytes[index + 1]) << 16 | UInt32(bytes[index + 2]) << 8 | UInt32(bytes[index + 3])
        }
    }

    /// bcrypt's radix-64 encoding of `bytes` (RFC 4648 bit order, bcrypt's alphabet, no padding), as ASCII.
    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8]()
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var accumulator: UInt32 = 0
        var bitCount = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bitCount += 8
            while bitCount >= 6 {
                bitCount -= 6
                output.append(Self.alphabet[Int(accumulator >> UInt32(bitCount) & 0x3F)])
            }
            accumulator &= (1 << UInt32(bitCount)) - 1
        }
        if bitCount > 0 { output.append(Self.alphabet[Int(accumulator << UInt32(6 - bitCount) & 0x3F)]) }
        return output
    }

    /// The first `count` bytes encoded by `characters` (all in the alphabet, enough of them); extra bits are ignored.
    private static func decode(_ characters: ArraySlice<UInt8>, count: Int) -> [UInt8] {
        var output = [UInt8]()
        output.reserveCapacity(count)
        var accumulator: UInt32 = 0
        var bitCount = 0
        for character in characters where output.count < count {
            accumulator = accumulator << 6 | UInt32(Self.values[Int(character)])
            bitCount += 6
            if bitCount >= 8 {
                bitCount -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bitCount)))
                accumulator &= (1 << UInt32(bitCount)) - 1
            }
        }
        return output
    }
}

/// Blowfish's state (18 P-array words, then four 256-word S-boxes) with EksBlowfish's salted key expansion.
private struct EksBlowfish {
    /// P-array at 0..<18, S-box `i` at `18 + 256 * i`.
    private var state: [UInt32] = BlowfishConstants.p + BlowfishConstants.s

    /// One Blowfish block encryption of (`left`, `right`).
    func encrypt(_ left: UInt32, _ right: UInt32) -> (UInt32, UInt32) {
        self.state.withUnsafeBufferPointer { Self.encrypt(left, right, $0.baseAddress!) }
    }

    /// `ExpandKey(state, salt, key)`: the key into the P-array, then every P and S word replaced by successive
    /// encryptions of the running block XOR-ed with the salt, taken cyclically.
    mutating func expand(key: [UInt8], salt: [UInt8]) {
        Self.expand(&self.state, key: key, salt: salt)
    }

    /// `ExpandKey(state, 0, key)`: as `expand(key:salt:)` with an all-zero salt.
    mutating func expand(key: [UInt8]) {
        Self.expand(&self.state, key: key, salt: nil)
    }

    private static func expand(_ state: inout [UInt32], key: [UInt8], salt: [UInt8]?) {
        state.withUnsafeMutableBufferPointer { buffer in
            let words = buffer.baseAddress!
            var position = 0
            for index in 0..<18 { words[index] ^= Self.word(key, &position) }
            position = 0
            var left: UInt32 = 0
            var right: UInt32 = 0
            for index in stride(from: 0, to: 18 + 1024, by: 2) {
                if let salt {
                    left ^= Self.word(salt, &position)
                    right ^= Self.word(salt, &position)
                }
                (left, right) = Self.encrypt(left, right, UnsafePointer(words))
                words[index] = left
                words[index + 1] = right
            }
        }
    }

    /// The next big-endian word of `bytes`, read cyclically from `position`.
    @inline(__always)
    private static func word(_ bytes: [UInt8], _ position: inout Int) -> UInt32 {
        var word: UInt32 = 0
        for _ in 0..<4 {
            word = word << 8 | UInt32(bytes[position])
            position += 1
            if position == bytes.count { position = 0 }
        }
        return word
    }

    @inline(__always)
    private static func encrypt(_ left: UInt32, _ right: UInt32, _ words: UnsafePointer<UInt32>) -> (UInt32, UInt32) {
        let s = words + 18
        @inline(__always) func f(_ x: UInt32) -> UInt32 {
            ((s[Int(x >> 24)] &+ s[256 + Int(x >> 16 & 0xFF)]) ^ s[512 + Int(x >> 8 & 0xFF)]) &+ s[768 + Int(x & 0xFF)]
        }
        var left = left ^ words[0]
        var right = right
        for round in stride(from: 1, to: 17, by: 2) {
            right ^= f(left) ^ words[round]
            left ^= f(right) ^ words[round + 1]
        }
        return (right ^ words[17], left)
    }
}
