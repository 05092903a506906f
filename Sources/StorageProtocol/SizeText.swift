/// A size as storage's bucket API takes it: a JSON integer of bytes, or text such as `"1kb"`, `"10 MB"`, `"2GB"`
/// (Supabase's `parseFileSizeToBytes`: b, kb, mb, gb, tb, powers of 1024, case-insensitive).
public enum SizeText {
    /// The number of bytes `text` names, or nil when it is not a size.
    public static func bytes(_ text: String) -> Int64? {
        let lowered = text.lowercased().filter { $0 != " " }
        let units: [(String, Int64)] = [("tb", 1 << 40), ("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10), ("b", 1)]
        for (suffix, factor) in units where lowered.hasSuffix(suffix) {
            return Self.number(String(lowered.dropLast(suffix.count)), factor: factor)
        }
        return Self.number(lowered, factor: 1)
    }

    private static func number(_ digits: String, factor: Int64) -> Int64? {
        guard !digits.isEmpty, digits.count <= 16, digits.allSatisfy({ $0 >= "0" && $0 <= "9" }), let value = Int64(digits) else {
            return nil
        }
        let (product, overflow) = value.multipliedReportingOverflow(by: factor)
        return overflow ? nil : product
    }
}
