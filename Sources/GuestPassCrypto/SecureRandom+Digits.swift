extension SecureRandom {
    /// Returns `count` (1–10) uniformly random decimal digits, for one-time codes sent by mail or shown to a user.
    ///
    /// Each digit comes from one random byte by rejection sampling: bytes 250–255 are discarded and a byte below 250 gives
    /// `byte % 10`, so every digit is exactly equally likely (a plain `byte % 10` would favour 0–5). Leading zeros are
    /// kept: a code is a string of `count` characters, never a number.
    ///
    /// - Throws: `OpenSSLError` if the generator is not (or no longer) properly seeded.
    public static func digits(_ count: Int) throws -> String {
        precondition((1...10).contains(count), "SecureRandom.digits: count must be 1...10")
        var digits = [UInt8]()
        digits.reserveCapacity(count)
        while digits.count < count {
            // A few spare bytes make a second draw rare (each byte is rejected with probability 6/256).
            for byte in try Self.bytes(count + 4) where byte < 250 && digits.count < count {
                digits.append(UInt8(ascii: "0") + byte % 10)
            }
        }
        return String(decoding: digits, as: UTF8.self)
    }
}
