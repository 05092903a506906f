public import Foundation

/// A calendar date without a time zone, as PostgreSQL's `date`.
public struct PostgresDate: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses `YYYY-MM-DD` (PostgreSQL's ISO output).
    public init?(iso text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count >= 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        self.init(year: year, month: month, day: day)
    }

    public var description: String {
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(self.year, 4))-\(pad(self.month, 2))-\(pad(self.day, 2))"
    }

    public static func < (lhs: PostgresDate, rhs: PostgresDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }
}

/// JSON text as stored in a `json` or `jsonb` column or sent as a parameter.
public struct PostgresJSON: Hashable, Sendable, CustomStringConvertible {
    /// The JSON document, as text.
    public let text: String

    public init(text: String) { self.text = text }

    /// Encodes `value` with `JSONEncoder`.
    public init(encoding value: some Encodable) throws {
        self.text = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    /// Decodes the document into `type`.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(self.text.utf8))
    }

    public var description: String { self.text }
}

/// Reads PostgreSQL's ISO `timestamptz` text (sessions run with `TimeZone=UTC`); dates are written by `RFC3339.format`.
enum TimestampText {
    /// Parses `YYYY-MM-DD HH:MM:SS[.ffffff][+HH[:MM[:SS]]]` (also with a `T` separator); no offset means UTC.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            index += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect(" T"), let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2)
        else { return nil }
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
        }
        var offsetSeconds = 0
        if index < bytes.count {
            if bytes[index] == UInt8(ascii: "Z") {
                index += 1
            } else {
                let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
                guard expect("+-"), let offsetHours = number(2) else { return nil }
                var offsetMinutes = 0
                var offsetExtra = 0
                if expect(":") {
                    guard let value = number(2) else { return nil }
                    offsetMinutes = value
                }
                if expect(":") {
                    guard let value = number(2) else { return nil }
                    offsetExtra = value
                }
                offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60 + offsetExtra)
            }
        }
        guard index == bytes.count else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let epoch = timegm(&parts)
        return Date(timeIntervalSince1970: Double(epoch - offsetSeconds) + fraction)
    }
}

/// Hex encoding for `bytea` text output (`\x…`).
enum ByteaText {
    static func parse(_ text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"), bytes.count % 2 == 0 else {
            return nil
        }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 48...57: return byte - 48
            case 97...102: return byte - 87
            case 65...70: return byte - 55
            default: return nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity((bytes.count - 2) / 2)
        var index = 2
        while index < bytes.count {
            guard let high = nibble(bytes[index]), let low = nibble(bytes[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }
}

/// The one way a time is written: timestamps of the HTTP API (as GoTrue writes them) and `Date` parameters sent to
/// PostgreSQL alike.
public enum RFC3339 {
    /// `2026-11-22T01:45:51.123456Z`: microsecond precision, UTC.
    public static func format(_ date: Date) -> String {
        let totalMicros = (date.timeIntervalSince1970 * 1_000_000).rounded(.down)
        var seconds = time_t((totalMicros / 1_000_000).rounded(.down))
        let micros = Int(totalMicros - Double(seconds) * 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(27)
        func append(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        append(Int(parts.tm_year) + 1900, 4)
        bytes.append(UInt8(ascii: "-"))
        append(Int(parts.tm_mon) + 1, 2)
        bytes.append(UInt8(ascii: "-"))
        append(Int(parts.tm_mday), 2)
        bytes.append(UInt8(ascii: "T"))
        append(Int(parts.tm_hour), 2)
        bytes.append(UInt8(ascii: ":"))
        append(Int(parts.tm_min), 2)
        bytes.append(UInt8(ascii: ":"))
        append(Int(parts.tm_sec), 2)
        bytes.append(UInt8(ascii: "."))
        append(micros, 6)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }
}
