#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The time of a SigV4 signature, in UTC: `amzDate` (`20150830T123600Z`, the `x-amz-date` header) and its first eight
/// characters, `dateStamp` (the scope's date).
public struct SigV4Timestamp: Sendable, Hashable {
    /// `YYYYMMDDTHHMMSSZ`.
    public let amzDate: String

    /// `YYYYMMDD`.
    public var dateStamp: String { String(self.amzDate.prefix(8)) }

    /// The timestamp of `amzDate`, or nil unless it is `YYYYMMDDTHHMMSSZ` (digits, `T`, `Z`).
    public init?(amzDate: String) {
        let bytes = Array(amzDate.utf8)
        guard bytes.count == 16, bytes[8] == UInt8(ascii: "T"), bytes[15] == UInt8(ascii: "Z") else { return nil }
        let digits = bytes[0..<8] + bytes[9..<15]
        guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        self.amzDate = amzDate
    }

    /// The timestamp of `secondsSince1970` (UTC).
    public init(secondsSince1970: Int) {
        var seconds = time_t(secondsSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let year = String(Int(parts.tm_year) + 1900)
        self.amzDate =
            "\(year)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    /// The current time.
    public static func now() -> SigV4Timestamp {
        SigV4Timestamp(secondsSince1970: Int(time(nil)))
    }
}
