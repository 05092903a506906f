import Testing

@testable import GuestPassCrypto

/// bcrypt verification for hashes imported from Supabase: the Blowfish constants recomputed from π, the published
/// crypt_blowfish (Openwall) and OpenBSD vectors, and the strings refused without any work.
@Suite struct BCryptTests {
    /// π's fractional part as big-endian 32-bit words, by Machin's formula π = 16·atan(1/5) − 4·atan(1/239) in fixed
    /// point (two guard words absorb the truncation of every division).
    static func piFractionWords(_ count: Int) -> [UInt32] {
        let width = count + 3  // word 0 is the integer part, then count + 2 fraction words
        func divide(_ number: inout [UInt32], by divisor: UInt64) {
            var remainder: UInt64 = 0
            for index in number.indices {
                let current = remainder << 32 | UInt64(number[index])
                number[index] = UInt32(current / divisor)
                remainder = current % divisor
            }
        }
        func add(_ number: inout [UInt32], _ other: [UInt32], subtracting: Bool) {
            var carry: Int64 = 0
            for index in number.indices.reversed() {
                let value = Int64(number[index]) + (subtracting ? -Int64(other[index]) : Int64(other[index])) + carry
                number[index] = UInt32(truncatingIfNeeded: value)
                carry = value >> 32
            }
        }
        func multiply(_ number: [UInt32], by factor: UInt64) -> [UInt32] {
            var result = number
            var carry: UInt64 = 0
            for index in result.indices.reversed() {
                let value = UInt64(result[index]) * factor + carry
                result[index] = UInt32(truncatingIfNeeded: value)
                carry = value >> 32
            }
            return result
        }
        func arctangentOfInverse(_ x: UInt64) -> [UInt32] {
            var power = [UInt32](repeating: 0, count: width)
            power[0] = 1
            divide(&power, by: x)
            var sum = power
            var k: UInt64 = 1
            while power.contains(where: { $0 != 0 }) {
                divide(&power, by: x * x)
                var term = power
                divide(&term, by: 2 * k + 1)
                add(&sum, term, subtracting: k % 2 == 1)
                k += 1
            }
            return sum
        }
        var pi = multiply(arctangentOfInverse(5), by: 16)
        add(&pi, multiply(arctangentOfInverse(239), by: 4), subtracting: true)
        #expect(pi[0] == 3)
        return Array(pi[1...count])
    }

    @Test func blowfishConstantsAreTheHexDigitsOfPi() {
        let pi = Self.piFractionWords(18 + 1024)
        #expect(BlowfishConstants.p.count == 18)
        #expect(BlowfishConstants.s.count == 1024)
        #expect(BlowfishConstants.p == Array(pi[0..<18]))
        #expect(BlowfishConstants.s == Array(pi[18...]))
        #expect(pi[0] == 0x243f_6a88 && pi[1] == 0x85a3_08d3, "π = 3.243F6A8885A308D3…")
    }

    /// crypt_blowfish's `wrapper.c` and OpenBSD's regression tests, as the hash and the password's bytes.
    static let published: [(hash: String, password: [UInt8])] = [
        ("$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW", Array("U*U".utf8)),
        ("$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK", Array("U*U*".utf8)),
        ("$2a$05$XXXXXXXXXXXXXXXXXXXXXOAcXxm9kjPGEMsLznoKqmqw7tc8WCx4a", Array("U*U*U".utf8)),
        (
            "$2a$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui",
            Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789chars after 72 are ignored".utf8)
        ),
        ("$2a$05$CCCCCCCCCCCCCCCCCCCCC.7uG0VCzI2bS7j6ymqJi9CdcdxiRTWNy", []),
        ("$2b$05$/OK.fbVrR/bpIqNJ5ianF.CE5elHaaO4EbggVDjb8P19RukzXSM3e", [0xFF, 0xFF, 0xA3]),
        ("$2y$05$/OK.fbVrR/bpIqNJ5ianF.CE5elHaaO4EbggVDjb8P19RukzXSM3e", [0xFF, 0xFF, 0xA3]),
        ("$2a$05$/OK.fbVrR/bpIqNJ5ianF.Sa7shbm4.OzKpvFnX1pQLmQW96oUlCq", [0xA3]),
        ("$2b$05$/OK.fbVrR/bpIqNJ5ianF.Sa7shbm4.OzKpvFnX1pQLmQW96oUlCq", [0xA3]),
        ("$2y$05$/OK.fbVrR/bpIqNJ5ianF.Sa7shbm4.OzKpvFnX1pQLmQW96oUlCq", [0xA3]),
        // Cost 10, as Supabase (GoTrue) stores them.
        ("$2a$10$XajjQvNhvvRt5GSeFk1xFeyqRrsxkhBkUiQeg0dt.wU1qD4aFDcga", Array("allmine".utf8)),
    ]

    /// Computed with libxcrypt's `crypt()` (through Python's ctypes) on this machine.
    static let crossChecked: [(hash: String, password: [UInt8])] = [
        ("$2a$05$CCCCCCCCCCCCCCCCCCCCC.6.O1dLNbjod2uo0DVcW.jHucKbPDdHS", [UInt8](repeating: UInt8(ascii: "0"), count: 72)),
        ("$2a$05$CCCCCCCCCCCCCCCCCCCCC.5LQLmfwPwybsMaNAd.cpKniuRlPW2Bm", [UInt8](repeating: UInt8(ascii: "0"), count: 71)),
        ("$2b$04$abcdefghijklmnopqrstuuI9bZCuY3iL1D8aa7mpGEju3kdgOOzj6", Array("pässwörd 🔑".utf8)),
        ("$2b$04$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa", Array("U*U".utf8)),
    ]

    @Test func verifiesPublishedAndCrossCheckedVectors() throws {
        for (hash, password) in Self.published + Self.crossChecked {
            let parsed = try #require(BCrypt.parse(hash))
            let version = hash[hash.index(hash.startIndex, offsetBy: 2)]
            #expect(BCrypt.string(password, salt: parsed.salt, cost: parsed.cost, version: version) == hash)
            #expect(PasswordHash.verify(password, against: hash) == .match(needsRehash: true), "\(hash)")
            if parsed.cost < 10 {  // a cost-10 hash takes a second in a debug build
                #expect(BCrypt.verify(password + [UInt8(ascii: "x")], against: hash) == (password.count >= 72), "\(hash)")
            }
        }
    }

    @Test func passwordsAreCappedAt72Bytes() {
        let hash = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.6.O1dLNbjod2uo0DVcW.jHucKbPDdHS"
        let zeros = [UInt8](repeating: UInt8(ascii: "0"), count: 72)
        #expect(BCrypt.verify(zeros + Array("and more".utf8), against: hash) == true)
        #expect(BCrypt.verify(Array(zeros.dropLast()), against: hash) == false)
    }

    @Test func aNULInsideThePasswordIsKeptAsGoDoes() {
        let hash = BCrypt.string(Array("a".utf8), salt: Array(0..<16), cost: 4)
        #expect(BCrypt.verify(Array("a".utf8), against: hash) == true)
        #expect(BCrypt.verify([UInt8(ascii: "a"), 0, UInt8(ascii: "b")], against: hash) == false)
    }

    @Test func twoAIsComputedAsTwoBNotWithCryptBlowfishCountermeasure() {
        // crypt_blowfish's own `2a` result for ff ff a3 differs (see `BCrypt`); OpenBSD and Go compute 2b's.
        #expect(BCrypt.verify([0xFF, 0xFF, 0xA3], against: "$2a$05$/OK.fbVrR/bpIqNJ5ianF.CE5elHaaO4EbggVDjb8P19RukzXSM3e") == true)
        #expect(BCrypt.verify([0xFF, 0xFF, 0xA3], against: "$2a$05$/OK.fbVrR/bpIqNJ5ianF.nqd1wy.pTMdcvrRWxyiGL2eMz.2a85.") == false)
    }

    @Test func roundTripsRandomPasswordsAndSalts() throws {
        for length in [0, 1, 7, 71, 72, 73, 100] {
            let password = try SecureRandom.bytes(length)
            let hash = BCrypt.string(password, salt: try SecureRandom.bytes(16), cost: 4)
            #expect(hash.utf8.count == 60)
            #expect(BCrypt.verify(password, against: hash) == true)
            #expect(BCrypt.verify(password.isEmpty ? [0x61] : Array(password.dropLast()), against: hash) == (length > 72))
        }
    }

    @Test func refusesMalformedStringsAndCostlyOnesWithoutWork() {
        let valid = "$2b$04$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa"
        #expect(BCrypt.parse(valid)?.cost == 4)
        let refused = [
            "", "$2b$", "$2b$04$", "$2$04$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
            "$2x$04$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
            "$2c$04$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
            "$2b$03$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
            "$2b$32$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
            "$2b$4$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa.",
            "$2b$-4$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
            "$2b$ 4$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
            "$2b$04$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQ",
            "$2b$04$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQaa",
            "$2b$04$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQ=",
            "$2b$04$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQ+",
            "$2b$04$.....................-OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
            "$2b$04$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQé",
            "$2b$04x......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
            // Valid bcrypt, but costs above 16 would buy seconds to minutes of CPU per attempt.
            "$2b$17$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
            "$2a$31$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa",
        ]
        for stored in refused {
            #expect(BCrypt.verify([], against: stored) == nil, "\(stored)")
            #expect(PasswordHash.verify([], against: stored) == .unsupported, "\(stored)")
        }
        #expect(BCrypt.parse("$2b$17$......................OFozeos6d2lMGDeQ3d5irLzOX9aUXQa")?.cost == 17)
    }

    @Test func aChangedHashCharacterIsAMismatch() {
        let hash = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"
        #expect(BCrypt.verify(Array("U*U".utf8), against: String(hash.dropLast()) + "X") == false)
        #expect(PasswordHash.verify(Array("U*V".utf8), against: hash) == .mismatch)
    }

    @Test func radix64UsesBcryptsAlphabet() {
        #expect(BCrypt.encode([0x00, 0x00, 0x00]) == Array("....".utf8))
        #expect(BCrypt.encode([0xFF, 0xFF, 0xFF]) == Array("9999".utf8))
        #expect(BCrypt.encode(Array(repeating: 0, count: 16)).count == 22)
        #expect(BCrypt.encode(Array(repeating: 0, count: 23)).count == 31)
    }
}
