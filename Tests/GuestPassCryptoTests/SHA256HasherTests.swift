import Testing

@testable import GuestPassCrypto

@Suite struct SHA256HasherTests {
    /// FIPS 180-2's examples ("abc", the 448-bit two-block message) and the empty input, fed in pieces.
    @Test func knownAnswers() {
        var empty = SHA256Hasher()
        empty.update([UInt8]())
        let emptyHex = empty.finalizeHex()
        #expect(emptyHex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")

        var abc = SHA256Hasher()
        abc.update(Array("a".utf8))
        abc.update(Array("bc".utf8))
        let abcHex = abc.finalizeHex()
        #expect(abcHex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")

        var twoBlocks = SHA256Hasher()
        twoBlocks.update("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        let twoBlocksHex = twoBlocks.finalizeHex()
        #expect(twoBlocksHex == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    /// Any split of the input gives `Digest.sha256` of the whole.
    @Test(arguments: [1, 63, 64, 65, 4096, 100_003])
    func piecesMatchTheOneShotDigest(pieceSize: Int) {
        let bytes = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        var hasher = SHA256Hasher()
        var start = 0
        while start < bytes.count {
            let end = min(start + pieceSize, bytes.count)
            bytes[start..<end].withUnsafeBytes { hasher.update($0) }
            start = end
        }
        let digest = hasher.finalize()
        #expect(digest == Digest.sha256(bytes))
    }
}
