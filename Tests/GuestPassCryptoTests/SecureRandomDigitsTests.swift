import Testing

@testable import GuestPassCrypto

/// One-time codes: `count` decimal digits, each uniform (rejection sampling, no modulo bias).
@Suite struct SecureRandomDigitsTests {
    @Test(arguments: 1...10)
    func hasTheLengthAndOnlyDigits(_ count: Int) throws {
        for _ in 0..<50 {
            let code = try SecureRandom.digits(count)
            #expect(code.utf8.count == count)
            #expect(code.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        }
    }

    /// 20,000 ten-digit codes. Each digit at each position is expected 2,000 times (standard deviation about 42): ±300
    /// never fails by chance. A plain `byte % 10` would favour 0–5 (26/256 each instead of 25.6/256), too little to see
    /// per digit, so the 200,000 digits are also pooled: 0–5 are expected 120,000 times (σ ≈ 219), the bias would give
    /// about 121,875, and the bound is ±1,000.
    @Test func digitsAreUniformAtEveryPosition() throws {
        let draws = 20_000
        var counts = [[Int]](repeating: [Int](repeating: 0, count: 10), count: 10)
        for _ in 0..<draws {
            for (position, byte) in try SecureRandom.digits(10).utf8.enumerated() {
                counts[position][Int(byte - UInt8(ascii: "0"))] += 1
            }
        }
        for position in 0..<10 {
            for digit in 0..<10 {
                #expect(abs(counts[position][digit] - draws / 10) < 300, "position \(position), digit \(digit)")
            }
        }
        let low = counts.map { $0[0..<6].reduce(0, +) }.reduce(0, +)
        #expect(abs(low - draws * 10 * 6 / 10) < 1_000, "\(low) of 200,000 digits are 0–5")
        #expect(counts[0][0] > 0, "leading zeros are kept")
    }
}
