/// The decimal parts of a JSON number's text (valid syntax assumed): its value is
/// `digits × 10^(exponent − fractionDigits)`, negated when `isNegative`. No arithmetic beyond counting, so any length
/// of digits is exact.
struct DecimalParts {
    /// Whether the text starts with `-` (`-0` too).
    private(set) var isNegative = false
    /// The ASCII digits of the integer and fraction parts, leading zeros dropped (none at all for zero).
    private(set) var digits: [UInt8] = []
    /// How many digits the fraction part has, as written (`1.50`: 2).
    private(set) var fractionDigits = 0
    /// The exponent, its magnitude capped at `exponentLimit`.
    private(set) var exponent = 0

    /// Larger than any exponent PostgreSQL accepts (it refuses 2^30 and up) and than any length of digits, small enough
    /// that no sum of them overflows.
    static let exponentLimit = 1 << 31

    init(_ text: String) {
        var inFraction = false
        var inExponent = false
        var exponentIsNegative = false
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-") where inExponent: exponentIsNegative = true
            case UInt8(ascii: "-"): self.isNegative = true
            case UInt8(ascii: "."): inFraction = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"): inExponent = true
            case UInt8(ascii: "0")...UInt8(ascii: "9") where inExponent:
                self.exponent = min(self.exponent * 10 + Int(byte - UInt8(ascii: "0")), Self.exponentLimit)
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if inFraction { self.fractionDigits += 1 }
                if byte != UInt8(ascii: "0") || !self.digits.isEmpty { self.digits.append(byte) }
            default: break  // the exponent's `+`
            }
        }
        if exponentIsNegative { self.exponent = -self.exponent }
    }

    /// The value in one form per number: the sign, the significant digits, and the power of ten of the last one. Zero
    /// is `(false, [], 0)` however it is written.
    var value: (isNegative: Bool, significand: ArraySlice<UInt8>, lastDigitPower: Int) {
        guard let last = self.digits.lastIndex(where: { $0 != UInt8(ascii: "0") }) else { return (false, [], 0) }
        let trailingZeros = self.digits.count - 1 - last
        return (self.isNegative, self.digits[...last], self.exponent - self.fractionDigits + trailingZeros)
    }

    /// The length of the value as PostgreSQL writes a `numeric` (and so a `jsonb` number): plain decimal, `-` unless
    /// zero, at least one integer digit, and `fractionDigits − exponent` fraction digits when positive (`1.50` →
    /// `1.50`, `1.5e1` → `15`, `1e-3` → `0.001`, `1e3` → `1000`).
    var plainDecimalLength: Int {
        let scale = max(0, self.fractionDigits - self.exponent)
        let integerDigits = self.digits.isEmpty ? 1 : max(1, self.digits.count - self.fractionDigits + self.exponent)
        return (self.isNegative && !self.digits.isEmpty ? 1 : 0) + integerDigits + (scale > 0 ? 1 + scale : 0)
    }
}
