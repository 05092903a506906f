import Testing

@testable import GuestPassCrypto

@Suite struct Base64URLTests {
    @Test func encodesRFC4648Vectors() {
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test func usesTheURLAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
    }

    @Test(arguments: ["Zg==", "Zg=", "Zm9v+w", "Zm9v/w", "Zm 9v", "Zm9v\n", "Z", "Zm9vY", "Zh", "Zm9", "Zm8é"])
    func rejectsNonCanonicalInput(_ input: String) {
        // Padding, '+', '/', whitespace, an impossible length, non-zero unused bits ("Zh", "Zm9"), non-ASCII.
        #expect(Base64URL.decode(input) == nil)
    }

    @Test func roundTripsAllLengths() throws {
        for count in 0..<70 {
            let bytes = try SecureRandom.bytes(count)
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }
}

@Suite struct PrimitivesTests {
    @Test func hmacMatchesRFC4231TestCase2() {
        let mac = HMACSHA256.authenticationCode(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(Digest.hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(HMACSHA256.isValidAuthenticationCode(mac, for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)))
        #expect(!HMACSHA256.isValidAuthenticationCode(mac, for: Array("what do ya want for nothing!".utf8), key: Array("Jefe".utf8)))
    }

    @Test func constantTimeEquality() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(ConstantTime.equals([UInt8](), [UInt8]()))
    }

    @Test func secureRandomBytes() throws {
        let first = try SecureRandom.bytes(32)
        let second = try SecureRandom.bytes(32)
        #expect(first.count == 32)
        #expect(first != second)
        #expect(try SecureRandom.bytes(0).isEmpty)
    }

    @Test func hs256KeysHaveAtLeast256Bits() throws {
        #expect(throws: CryptoError.keyTooSmall) { try HS256Key(secret: [UInt8](repeating: 7, count: 31)) }
        let generated = try HS256Key.generate()
        #expect(generated.withUnsafeSecret { $0.count } == 32)
        #expect(!"\(generated)".contains(Digest.hex(generated.withUnsafeSecret { $0 })))
    }

    @Test func rfc7515A1MACBytes() throws {
        let key = try HS256Key(secret: #require(Base64URL.decode(Fixtures.a1Key)))
        let signingInput = Fixtures.a1Token.split(separator: ".").prefix(2).joined(separator: ".")
        let mac = key.authenticationCode(for: Array(signingInput.utf8))
        #expect(Digest.hex(mac) == Fixtures.a1MACHex)
        #expect(Base64URL.encode(mac) == "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
    }

    @Test func openSSLErrorsAreDrainedIntoTheError() {
        #expect {
            _ = try ES256PublicKey(pemRepresentation: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
        } throws: { error in
            guard let error = error as? OpenSSLError else { return false }
            return error.operation == "PEM_read_bio_PUBKEY" && !error.codes.isEmpty
        }
    }
}
