import Foundation

/// The encodings a message is written with: quoted-printable bodies (RFC 2045), RFC 2047 encoded-words for header text
/// that is not plain ASCII, RFC 5322 mailboxes and dates. Every output line ends in CRLF and is at most 78 bytes long
/// outside of the one-line address headers (at most 9 + 200 × 4 + 254 bytes, far below the 998-byte limit).
enum MIME {
    static let crlf: [UInt8] = [0x0D, 0x0A]

    // MARK: Bodies

    /// `text` as quoted-printable UTF-8: each line of `text` (ended by CRLF, CR or LF) becomes one or more output
    /// lines of at most 76 bytes, joined by soft breaks (`=` CRLF); `=`, bytes outside printable ASCII, and a space or
    /// tab at the end of a line are written as `=XX`. The result ends with CRLF.
    static func quotedPrintable(_ text: String) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count + text.utf8.count / 8 + 2)
        for line in Self.lines(of: text) {
            var length = 0
            for (index, byte) in line.enumerated() {
                let isLast = index == line.count - 1
                let literal =
                    (byte >= 33 && byte <= 126 && byte != UInt8(ascii: "=")) || ((byte == 0x20 || byte == 0x09) && !isLast)
                let width = literal ? 1 : 3
                // The last character of a line may use all 76 bytes; any other leaves room for a soft break's `=`.
                if length + width > (isLast ? 76 : 75) {
                    output.append(UInt8(ascii: "="))
                    output.append(contentsOf: Self.crlf)
                    length = 0
                }
                if literal {
                    output.append(byte)
                } else {
                    output.append(contentsOf: [UInt8(ascii: "="), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
                }
                length += width
            }
            output.append(contentsOf: Self.crlf)
        }
        return output
    }

    /// The lines of `text` as UTF-8, split at CRLF, CR or LF; a line break at the very end does not start a line.
    static func lines(of text: String) -> [ArraySlice<UInt8>] {
        let bytes = Array(text.utf8)
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x0D || byte == 0x0A {
                lines.append(bytes[start..<index])
                index += (byte == 0x0D && index + 1 < bytes.count && bytes[index + 1] == 0x0A) ? 2 : 1
                start = index
            } else {
                index += 1
            }
        }
        if start < bytes.count || lines.isEmpty { lines.append(bytes[start..<bytes.count]) }
        return lines
    }

    // MARK: Header text

    /// Whether `text` may be written into a header as it is: printable ASCII only (spaces included) and no `=?`,
    /// which a reader would take for the start of an encoded-word.
    static func isPlainHeaderText(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E } && !text.contains("=?")
    }

    /// `text` as unstructured header text (a subject) after a header name `nameLength` bytes long: as it is when it is
    /// plain and fits on a 78-byte line, otherwise as RFC 2047 `=?UTF-8?B?…?=` encoded-words of at most 75 bytes,
    /// one per line (folded with CRLF and a space), never splitting a character.
    static func headerText(_ text: String, nameLength: Int) -> String {
        if Self.isPlainHeaderText(text) && nameLength + 2 + text.utf8.count <= 78 { return text }
        return Self.encodedWords(text).joined(separator: "\r\n ")
    }

    /// `text` as a list of encoded-words, each holding at most 45 bytes of UTF-8 (60 base64 characters, 72 in all).
    /// Characters are kept whole where they fit; a single character longer than 45 bytes is split between scalars.
    static func encodedWords(_ text: String) -> [String] {
        let limit = 45
        var chunks: [[UInt8]] = []
        var current: [UInt8] = []
        func add(_ piece: [UInt8]) {
            if current.count + piece.count > limit {
                chunks.append(current)
                current = []
            }
            current.append(contentsOf: piece)
        }
        for character in text {
            let bytes = Array(String(character).utf8)
            if bytes.count <= limit {
                add(bytes)
            } else {
                for scalar in character.unicodeScalars { add(Array(String(scalar).utf8)) }
            }
        }
        if !current.isEmpty || chunks.isEmpty { chunks.append(current) }
        return chunks.map { "=?UTF-8?B?\(Data($0).base64EncodedString())?=" }
    }

    /// A mailbox for `From` or `To`: the bare address, or the display name (a quoted string when plain ASCII,
    /// encoded-words otherwise) followed by `<address>`.
    static func mailbox(_ mailbox: MailAddress) -> String {
        guard let name = mailbox.displayName else { return mailbox.address }
        if Self.isPlainHeaderText(name) {
            var quoted = "\""
            for character in name {
                if character == "\"" || character == "\\" { quoted.append("\\") }
                quoted.append(character)
            }
            return "\(quoted)\" <\(mailbox.address)>"
        }
        return "\(Self.encodedWords(name).joined(separator: "\r\n ")) <\(mailbox.address)>"
    }

    // MARK: Dates

    /// `date` in RFC 5322's format, in UTC: `Tue, 01 Jul 2025 09:05:03 +0000`.
    static func date(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = ((days % 7) + 11) % 7  // 1970-01-01 was a Thursday (index 4 with Sunday = 0)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(weekdays[Int(weekday)]), \(pad(day, 2)) \(months[Int(month - 1)]) \(pad(year, 4)) "
            + "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay % 3600 / 60, 2)):\(pad(secondOfDay % 60, 2)) +0000"
    }
}
