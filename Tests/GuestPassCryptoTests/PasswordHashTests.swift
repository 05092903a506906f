import Testing

@testable import GuestPassCrypto

/// Password hashes: the PHC string round trip, rehash detection, strings made elsewhere (Python), and every kind of
/// tampered or hostile stored string refused without a trap and without costly work.
@Suite struct PasswordHashTests {
    /// Cheap parameters (128 KiB, about a millisecond) for the loops.
    static let cheap = PasswordHashParameters(logN: 10, r: 1, p: 1)

    @Test func roundTripsAtTheStandardParameters() throws {
        let password = Array("correct horse battery staple".utf8)
        let stored = try PasswordHash.hash(password)
        #expect(stored.hasPrefix("$scrypt$ln=15,r=8,p=1$"))
        let fields = stored.split(separator: "$", omittingEmptySubsequences: false)
        #expect(fields.count == 5 && fields[3].count == 22 && fields[4].count == 43)
        #expect(PasswordHash.verify(password, against: stored) == .match(needsRehash: false))
        #expect(PasswordHash.verify(Array("correct horse battery stapler".utf8), against: stored) == .mismatch)
        #expect(PasswordHash.verify([], against: stored) == .mismatch)
        #expect(try PasswordHash.hash(password) != stored, "a fresh salt per hash")
    }

    @Test func standardParametersAreOWASPs() {
        #expect(PasswordHashParameters.standard == PasswordHashParameters(logN: 15, r: 8, p: 1))
        #expect(PasswordHashParameters.standard.memoryBytes == 32 << 20)
        #expect(PasswordHashParameters.standard.isAccepted)
    }

    @Test func otherParametersNeedARehash() throws {
        let password = Array("hunter2".utf8)
        let other = PasswordHashParameters(logN: 14, r: 8, p: 2)
        let stored = try PasswordHash.hash(password, parameters: other)
        #expect(stored.hasPrefix("$scrypt$ln=14,r=8,p=2$"))
        #expect(PasswordHash.verify(password, against: stored) == .match(needsRehash: true))
        #expect(PasswordHash.verify(password, against: stored, parameters: other) == .match(needsRehash: false))
        #expect(PasswordHash.verify(Array("hunter3".utf8), against: stored) == .mismatch)
        let cheap = try PasswordHash.hash(password, parameters: Self.cheap)
        #expect(PasswordHash.verify(password, against: cheap, parameters: other) == .match(needsRehash: true))
    }

    /// Made with Python: `"$scrypt$ln=…,r=…,p=…$" + b64(salt) + "$" + b64(hashlib.scrypt(…, dklen=32))`, `b64` being
    /// `base64.b64encode(…).rstrip("=")`.
    @Test func verifiesStringsMadeWithPython() {
        #expect(
            PasswordHash.verify(
                Array("correct horse battery staple".utf8),
                against: "$scrypt$ln=15,r=8,p=1$AAECAwQFBgcICQoLDA0ODw$eo40JB24mNWRdcaWU4xBdGepdf/laQaEJfFhiNMVnFg")
                == .match(needsRehash: false))
        let slashes = "$scrypt$ln=14,r=8,p=2$+//++//++//++//++//+AA$767ZmCSn6OZEpEixVU/DYCV/Nq1kB0ujpBHBY23bmVc"
        #expect(PasswordHash.verify(Array("pässwörd".utf8), against: slashes) == .match(needsRehash: true))
        #expect(PasswordHash.verify(Array("passwörd".utf8), against: slashes) == .mismatch)
        let parsed = PasswordHash.parse(slashes)
        #expect(parsed?.salt == [0xFB, 0xFF, 0xFE, 0xFB, 0xFF, 0xFE, 0xFB, 0xFF, 0xFE, 0xFB, 0xFF, 0xFE, 0xFB, 0xFF, 0xFE, 0x00])
    }

    @Test func bcryptHashesMatchAndNeedARehash() {
        let stored = "$2a$10$XajjQvNhvvRt5GSeFk1xFeyqRrsxkhBkUiQeg0dt.wU1qD4aFDcga"
        #expect(PasswordHash.verify(Array("allmine".utf8), against: stored) == .match(needsRehash: true))
        #expect(PasswordHash.verify(Array("allmine!".utf8), against: stored) == .mismatch)
    }

    @Test func refusesParametersOutsideTheLimits() throws {
        let refused: [PasswordHashParameters] = [
            .init(logN: 9, r: 8, p: 1), .init(logN: 21, r: 1, p: 1), .init(logN: 15, r: 0, p: 1), .init(logN: 15, r: 33, p: 1),
            .init(logN: 15, r: 8, p: 0), .init(logN: 15, r: 8, p: 17),
            .init(logN: 20, r: 32, p: 16),  // 4 GiB
            .init(logN: 18, r: 16, p: 1),  // 512 MiB
        ]
        for parameters in refused {
            #expect(!parameters.isAccepted, "\(parameters)")
            #expect(throws: PasswordHashError.invalidParameters) { try PasswordHash.hash([1], parameters: parameters) }
        }
        #expect(PasswordHashParameters(logN: 15, r: 8, p: 16).isAccepted, "exactly 16 × the standard work")
        #expect(!PasswordHashParameters(logN: 16, r: 8, p: 16).isAccepted, "32 × the standard work")
        #expect(PasswordHashParameters(logN: 20, r: 2, p: 1).isAccepted, "256 MiB")
        #expect(!PasswordHashParameters(logN: 20, r: 3, p: 1).isAccepted, "384 MiB")
        #expect(PasswordHashParameters(logN: 10, r: 1, p: 1).isAccepted)
    }

    @Test func tamperedStringsAreUnsupportedOrMismatchedNeverATrap() throws {
        let password = Array("secret".utf8)
        let stored = try PasswordHash.hash(password, parameters: Self.cheap)
        let fields = stored.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        let salt = fields[3]
        let hash = fields[4]
        let unsupported = [
            "", "$", "$$$$", "scrypt", "$scrypt", "$scrypt$", "$scrypt$$$", "\(stored)$", "$\(stored)", " \(stored)",
            "\(stored) ", "\(stored)\n", "\(stored)\0", String(stored.dropLast()), "\(stored)A",
            "$argon2id$ln=10,r=1,p=1$\(salt)$\(hash)", "$SCRYPT$ln=10,r=1,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=1$\(salt)$\(hash)", "$scrypt$ln=10,r=1,p=1,x=1$\(salt)$\(hash)",
            "$scrypt$r=1,ln=10,p=1$\(salt)$\(hash)", "$scrypt$ln=010,r=1,p=1$\(salt)$\(hash)",
            "$scrypt$ln=+10,r=1,p=1$\(salt)$\(hash)", "$scrypt$ln=-10,r=1,p=1$\(salt)$\(hash)",
            "$scrypt$ln= 10,r=1,p=1$\(salt)$\(hash)", "$scrypt$ln=10 ,r=1,p=1$\(salt)$\(hash)",
            "$scrypt$ln=,r=1,p=1$\(salt)$\(hash)", "$scrypt$ln=10,r=1,p=1,$\(salt)$\(hash)",
            "$scrypt$ln=10,,r=1,p=1$\(salt)$\(hash)", "$scrypt$ln=1e1,r=1,p=1$\(salt)$\(hash)",
            "$scrypt$ln=0x10,r=1,p=1$\(salt)$\(hash)", "$scrypt$ln=١٠,r=1,p=1$\(salt)$\(hash)",
            "$scrypt$ln=99999999999999999999,r=1,p=1$\(salt)$\(hash)", "$scrypt$ln=4294967306,r=1,p=1$\(salt)$\(hash)",
            "$scrypt$ln=266,r=1,p=1$\(salt)$\(hash)", "$scrypt$ln=9,r=1,p=1$\(salt)$\(hash)",
            "$scrypt$ln=21,r=1,p=1$\(salt)$\(hash)", "$scrypt$ln=10,r=0,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=33,p=1$\(salt)$\(hash)", "$scrypt$ln=10,r=1,p=0$\(salt)$\(hash)",
            "$scrypt$ln=10,r=1,p=17$\(salt)$\(hash)", "$scrypt$ln=20,r=32,p=16$\(salt)$\(hash)",
            "$scrypt$ln=20,r=8,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=1,p=1$$\(hash)", "$scrypt$ln=10,r=1,p=1$\(salt)$", "$scrypt$ln=10,r=1,p=1$\(hash)$\(salt)",
            "$scrypt$ln=10,r=1,p=1$\(salt)==$\(hash)", "$scrypt$ln=10,r=1,p=1$\(salt)$\(hash)=",
            "$scrypt$ln=10,r=1,p=1$\(salt.dropLast(2))$\(hash)", "$scrypt$ln=10,r=1,p=1$\(salt)AA$\(hash)",
            "$scrypt$ln=10,r=1,p=1$\(salt)$\(hash.dropLast(2))", "$scrypt$ln=10,r=1,p=1$\(salt)$\(hash)AAA",
            "$scrypt$ln=10,r=1,p=1$\(salt.dropLast())B$\(hash)",  // non-zero unused bits: not canonical
            "$scrypt$ln=10,r=1,p=1$\(salt.dropLast())-$\(hash)", "$scrypt$ln=10,r=1,p=1$\(salt.dropLast())_$\(hash)",
            "$scrypt$ln=10,r=1,p=1$\(salt.dropLast()) $\(hash)", "$scrypt$ln=10,r=1,p=1$\(salt)$\(hash.dropLast())é",
            String(repeating: "$scrypt", count: 2000), String(repeating: "A", count: 100_000),
            "$2b$" + String(repeating: "A", count: 10_000),
        ]
        for candidate in unsupported {
            #expect(PasswordHash.verify(password, against: candidate) == .unsupported, "\(candidate.prefix(80))")
        }
        // A changed salt or hash that still parses is a plain mismatch.
        let otherHash = String(Base64URL.encode(try SecureRandom.bytes(32)).map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        #expect(PasswordHash.verify(password, against: "$scrypt$ln=10,r=1,p=1$\(salt)$\(otherHash)") == .mismatch)
        #expect(PasswordHash.verify(password, against: "$scrypt$ln=10,r=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$\(hash)") == .mismatch)
        #expect(PasswordHash.verify(password, against: "$scrypt$ln=11,r=1,p=1$\(salt)$\(hash)") == .mismatch)
        #expect(PasswordHash.verify(password, against: stored, parameters: Self.cheap) == .match(needsRehash: false))
    }

    /// Random strings over the format's own characters, and random mutations of a valid hash: never a trap, and a
    /// match only for the unchanged string.
    @Test func fuzzedStringsNeverTrapNorMatch() throws {
        let password = Array("fuzz".utf8)
        let stored = try PasswordHash.hash(password, parameters: Self.cheap)
        let characters = Array("$scrypt=ln,rp0123456789+/=-_AZaz2aby. é\0".unicodeScalars)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<90, using: &generator)
            let candidate = String(String.UnicodeScalarView((0..<length).map { _ in characters.randomElement(using: &generator)! }))
            #expect(PasswordHash.verify(password, against: candidate) != .match(needsRehash: false))
        }
        for _ in 0..<300 {
            var bytes = Array(stored.utf8)
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes[position] = characters.randomElement(using: &generator)!.utf8.first!
                case 2: bytes.remove(at: position)
                default: bytes.insert(UInt8.random(in: 0x20...0x7E, using: &generator), at: position)
                }
                if bytes.isEmpty { bytes = [0x24] }
            }
            let candidate = String(decoding: bytes, as: UTF8.self)
            let result = PasswordHash.verify(password, against: candidate, parameters: Self.cheap)
            #expect(result != .match(needsRehash: false) || candidate == stored)
        }
    }

    @Test func dummyVerificationDoesTheWorkOfARealOne() throws {
        let parsed = try #require(PasswordHash.parse(PasswordHash.dummyHash))
        #expect(parsed.parameters == .standard)
        #expect(PasswordHash.dummyHash == PasswordHash.dummyHash, "computed once")
        #expect(PasswordHash.verify(Array("guess".utf8), against: PasswordHash.dummyHash) == .mismatch)
        // The same work as a real verification: one scrypt at the standard parameters (asserted above), not a
        // shortcut. Not timed here: a timed unit test on a shared machine is flaky.
        PasswordHash.verifyDummy(Array("guess".utf8))
    }
}
