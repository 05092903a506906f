import Testing

@testable import GuestPassCrypto

/// scrypt over `EVP_PBE_scrypt`: RFC 7914's test vectors, one at `PasswordHashParameters.standard` computed with
/// Python's `hashlib.scrypt`, and the parameters refused before libcrypto runs.
@Suite struct SCryptTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let password: String
        let salt: String
        let logN: UInt8
        let r: UInt32
        let p: UInt32
        let hex: String
        var testDescription: String { "N=2^\(self.logN), r=\(self.r), p=\(self.p)" }
    }

    /// RFC 7914 §12, all four (the last fills 1 GiB and takes about 4 s on the 2-core development machine).
    static let rfc7914: [Vector] = [
        Vector(
            password: "", salt: "", logN: 4, r: 1, p: 1,
            hex: "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"),
        Vector(
            password: "password", salt: "NaCl", logN: 10, r: 8, p: 16,
            hex: "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"),
        Vector(
            password: "pleaseletmein", salt: "SodiumChloride", logN: 14, r: 8, p: 1,
            hex: "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"),
        Vector(
            password: "pleaseletmein", salt: "SodiumChloride", logN: 20, r: 8, p: 1,
            hex: "2101cb9b6a511aaeaddbbe09cf70f881ec568d574a2ffd4dabe5ee9820adaa478e56fd8f4ba5d09ffa1c6d927c40f4c337304049e8a952fbcbf45c6fa77a41a4"),
    ]

    @Test(arguments: Self.rfc7914)
    func rfc7914Vector(_ vector: Vector) throws {
        let output = try SCrypt.derive(
            password: Array(vector.password.utf8), salt: Array(vector.salt.utf8), logN: vector.logN, r: vector.r, p: vector.p,
            length: 64)
        #expect(Digest.hex(output) == vector.hex)
    }

    /// `hashlib.scrypt(b"correct horse battery staple", salt=bytes(range(16)), n=2**15, r=8, p=1, dklen=32)`.
    @Test func matchesPythonAtTheStandardParameters() throws {
        let output = try SCrypt.derive(
            password: Array("correct horse battery staple".utf8), salt: Array(0..<16), logN: 15, r: 8, p: 1, length: 32)
        #expect(Digest.hex(output) == "7a8e34241db898d59175c696538c417467a975ffe569068425f16188d3159c58")
    }

    @Test func outputLengthIsThePBKDF2Prefix() throws {
        let long = try SCrypt.derive(password: [1, 2, 3], salt: [4, 5, 6], logN: 4, r: 1, p: 1, length: 64)
        let short = try SCrypt.derive(password: [1, 2, 3], salt: [4, 5, 6], logN: 4, r: 1, p: 1, length: 16)
        #expect(short == Array(long.prefix(16)))
    }

    @Test func refusesInvalidParametersBeforeLibcrypto() {
        let cases: [(logN: UInt8, r: UInt32, p: UInt32, length: Int)] = [
            (0, 1, 1, 32), (64, 1, 1, 32), (200, 1, 1, 32), (4, 0, 1, 32), (4, 1, 0, 32), (4, 1 << 15, 1 << 15, 32),
            (4, 1, 1, 0), (4, 1, 1, -1), (4, 1, 1, (1 << 30) + 1), (63, UInt32.max, 1, 32),
        ]
        for parameters in cases {
            #expect(throws: PasswordHashError.invalidParameters) {
                try SCrypt.derive(
                    password: [], salt: [], logN: parameters.logN, r: parameters.r, p: parameters.p, length: parameters.length)
            }
        }
    }

    @Test func libcryptoRefusalsAreOpenSSLErrors() {
        // RFC 7914 requires N < 2^(16·r): with r = 1, N = 2^16 is out of range.
        #expect(throws: OpenSSLError.self) { try SCrypt.derive(password: [], salt: [], logN: 16, r: 1, p: 1, length: 32) }
    }

    @Test func memoryBoundIsWhatOpenSSLAllocates() throws {
        #expect(SCrypt.memoryNeeded(logN: 15, r: 8, p: 1) == 128 * 8 * (32768 + 2 + 1) + 65536)
        #expect(SCrypt.memoryNeeded(logN: 63, r: 1 << 20, p: 1) == nil)
        // Just enough memory: the bound handed to libcrypto is not OpenSSL's default 32 MiB ceiling.
        #expect(try SCrypt.derive(password: [1], salt: [2], logN: 16, r: 8, p: 1, length: 32).count == 32)
    }
}
