import Foundation
import Testing

@testable import GuestPassMail

/// `MailMessage.rendered()`: headers, encodings, MIME structure, line rules, and that no field can add a header.
@Suite struct MessageRenderingTests {
    static let date = Date(timeIntervalSince1970: 1_751_360_703)  // Tue, 01 Jul 2025 09:05:03 UTC

    static func message(
        subject: String = "Confirm your email address",
        text: String = "Hello,\nyour code is 123456.\n",
        html: String? = nil,
        fromName: String? = "GuestPass",
        toName: String? = nil
    ) throws -> MailMessage {
        try MailMessage(
            from: MailAddress("no-reply@guestpass.test", displayName: fromName),
            to: MailAddress("someone@example.com", displayName: toName),
            subject: subject,
            text: text,
            html: html,
            messageID: "<abc123@guestpass.test>",
            date: Self.date
        )
    }

    /// The header block (before the first empty line), unfolded, as (name, value) pairs; and the body.
    static func split(_ rendered: [UInt8]) -> (headers: [(String, String)], body: String) {
        let text = String(decoding: rendered, as: UTF8.self)
        let end = text.range(of: "\r\n\r\n")!
        let block = text[..<end.lowerBound].replacingOccurrences(of: "\r\n ", with: " ")
        let headers = block.components(separatedBy: "\r\n").map { line -> (String, String) in
            let colon = line.firstIndex(of: ":")!
            return (String(line[..<colon]), String(line[line.index(colon, offsetBy: 2)...]))
        }
        return (headers, String(text[end.upperBound...]))
    }

    /// Decodes a run of RFC 2047 B encoded-words separated by spaces.
    static func decodeEncodedWords(_ value: String) -> String {
        var bytes: [UInt8] = []
        for word in value.split(separator: " ") {
            #expect(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="))
            let base64 = word.dropFirst("=?UTF-8?B?".count).dropLast(2)
            bytes += Data(base64Encoded: String(base64))!
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Decodes quoted-printable text (CRLF line ends become LF).
    static func decodeQuotedPrintable(_ text: String) -> String {
        var bytes: [UInt8] = []
        let input = Array(text.utf8)
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "=") {
                if input[index + 1] == 0x0D {
                    index += 3
                    continue
                }
                bytes.append(UInt8(String(decoding: input[index + 1...index + 2], as: UTF8.self), radix: 16)!)
                index += 3
            } else if input[index] == 0x0D {
                index += 1
            } else {
                bytes.append(input[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func checkLines(_ rendered: [UInt8], maximum: Int = 998) {
        var length = 0
        for (index, byte) in rendered.enumerated() {
            if byte == 0x0D {
                #expect(index + 1 < rendered.count && rendered[index + 1] == 0x0A, "bare CR at \(index)")
            } else if byte == 0x0A {
                #expect(index > 0 && rendered[index - 1] == 0x0D, "bare LF at \(index)")
                length = 0
                continue
            }
            if byte != 0x0D { length += 1 }
            #expect(length <= maximum, "line longer than \(maximum) at \(index)")
        }
        #expect(rendered.suffix(2) == [0x0D, 0x0A])
    }

    @Test func headersOfAPlainTextMessage() throws {
        let rendered = try Self.message().rendered()
        let (headers, body) = Self.split(rendered)
        #expect(headers.map(\.0) == ["Date", "From", "To", "Subject", "Message-ID", "MIME-Version", "Content-Type", "Content-Transfer-Encoding"])
        let values = Dictionary(headers, uniquingKeysWith: { first, _ in first })
        #expect(values["Date"] == "Tue, 01 Jul 2025 09:05:03 +0000")
        #expect(values["From"] == "\"GuestPass\" <no-reply@guestpass.test>")
        #expect(values["To"] == "someone@example.com")
        #expect(values["Subject"] == "Confirm your email address")
        #expect(values["Message-ID"] == "<abc123@guestpass.test>")
        #expect(values["MIME-Version"] == "1.0")
        #expect(values["Content-Type"] == "text/plain; charset=UTF-8")
        #expect(values["Content-Transfer-Encoding"] == "quoted-printable")
        #expect(body == "Hello,\r\nyour code is 123456.\r\n")
        Self.checkLines(rendered, maximum: 78)
        #expect(try Self.message().rendered() == rendered, "a message renders the same bytes every time")
    }

    @Test func datesAcrossTheCalendar() {
        #expect(MIME.date(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 +0000")
        #expect(MIME.date(Date(timeIntervalSince1970: 951_782_400)) == "Tue, 29 Feb 2000 00:00:00 +0000")
        #expect(MIME.date(Date(timeIntervalSince1970: -1)) == "Wed, 31 Dec 1969 23:59:59 +0000")
        #expect(MIME.date(Date(timeIntervalSince1970: 4_102_444_799.9)) == "Thu, 31 Dec 2099 23:59:59 +0000")
    }

    @Test func aNonASCIISubjectIsEncoded() throws {
        let subject = "Bestätigen Sie Ihre E-Mail-Adresse 🎉 — 確認してください"
        let rendered = try Self.message(subject: subject).rendered()
        let value = try #require(Self.split(rendered).headers.first { $0.0 == "Subject" }?.1)
        #expect(value.hasPrefix("=?UTF-8?B?"))
        #expect(Self.decodeEncodedWords(value) == subject)
        Self.checkLines(rendered, maximum: 84)
    }

    @Test func aLongASCIISubjectIsFoldedIntoEncodedWords() throws {
        let subject = String(repeating: "Please confirm your address. ", count: 20)
        let rendered = try Self.message(subject: subject).rendered()
        let value = try #require(Self.split(rendered).headers.first { $0.0 == "Subject" }?.1)
        #expect(Self.decodeEncodedWords(value) == subject)
        Self.checkLines(rendered, maximum: 84)
        // "=?" in a plain subject would read as an encoded-word, so such a subject is encoded too.
        let tricky = try Self.message(subject: "=?UTF-8?B?SGk=?=").rendered()
        let trickyValue = try #require(Self.split(tricky).headers.first { $0.0 == "Subject" }?.1)
        #expect(Self.decodeEncodedWords(trickyValue) == "=?UTF-8?B?SGk=?=")
    }

    @Test func displayNamesAreQuotedOrEncoded() throws {
        let quoted = try Self.message(fromName: "Guest \"Pass\" \\ Team", toName: "Zoë Müller").rendered()
        let headers = Dictionary(Self.split(quoted).headers, uniquingKeysWith: { first, _ in first })
        #expect(headers["From"] == "\"Guest \\\"Pass\\\" \\\\ Team\" <no-reply@guestpass.test>")
        let to = try #require(headers["To"])
        #expect(to.hasSuffix(" <someone@example.com>"))
        #expect(Self.decodeEncodedWords(String(to.dropLast(" <someone@example.com>".count))) == "Zoë Müller")
    }

    @Test func multipartAlternativeWithTextThenHTML() throws {
        let text = "Your code: 123456\nLink: https://example.com/verify?token=abc&type=signup\n"
        let html = "<p>Your code: <b>123456</b></p>\n<p><a href=\"https://example.com/verify?token=abc&amp;type=signup\">Confirm</a></p>\n"
        let message = try Self.message(text: text, html: html)
        let rendered = message.rendered()
        Self.checkLines(rendered, maximum: 78)
        let (headers, body) = Self.split(rendered)
        let values = Dictionary(headers, uniquingKeysWith: { first, _ in first })
        let boundary = message.boundary
        #expect(values["Content-Type"] == "multipart/alternative; boundary=\"\(boundary)\"")
        #expect(values["Content-Transfer-Encoding"] == nil)
        let parts = body.components(separatedBy: "--\(boundary)")
        #expect(parts.count == 4)  // before the first, text, html, and "--\r\n" after the closing delimiter
        #expect(parts[0] == "")
        #expect(parts[3] == "--\r\n")
        let textPart = parts[1].components(separatedBy: "\r\n\r\n")
        #expect(textPart[0] == "\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable")
        #expect(Self.decodeQuotedPrintable(textPart[1]) == text)
        let htmlPart = parts[2].components(separatedBy: "\r\n\r\n")
        #expect(htmlPart[0] == "\r\nContent-Type: text/html; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable")
        #expect(Self.decodeQuotedPrintable(htmlPart[1]) == html)
    }

    @Test func quotedPrintableRules() {
        let encoded = String(decoding: MIME.quotedPrintable("a=b café \ttrailing \nx"), as: UTF8.self)
        #expect(encoded == "a=3Db caf=C3=A9 \ttrailing=20\r\nx\r\n")
        let long = String(repeating: "abcdefghij", count: 30) + "=é"
        let wrapped = String(decoding: MIME.quotedPrintable(long), as: UTF8.self)
        for line in wrapped.components(separatedBy: "\r\n") { #expect(line.utf8.count <= 76) }
        #expect(Self.decodeQuotedPrintable(wrapped) == long + "\n")
        // CRLF, CR and LF line ends all become CRLF; blank lines and a lone dot survive.
        #expect(String(decoding: MIME.quotedPrintable("a\r\nb\rc\n\n.\n"), as: UTF8.self) == "a\r\nb\r\nc\r\n\r\n.\r\n")
        #expect(String(decoding: MIME.quotedPrintable(""), as: UTF8.self) == "\r\n")
    }

    @Test func noFieldCanInjectAHeader() throws {
        let from = try MailAddress("no-reply@guestpass.test")
        let to = try MailAddress("someone@example.com")
        for subject in ["Hi\r\nBcc: victim@example.com", "Hi\nBcc: x@y.z", "Hi\rX: y", "Hi\u{0}", "Hi\u{2028}Bcc: a@b.c", "Hi\u{85}"] {
            #expect(throws: MailValidationError.self, "\(subject.debugDescription)") {
                try MailMessage(from: from, to: to, subject: subject, text: "x")
            }
        }
        for name in ["Eve\r\nBcc: victim@example.com", "Eve\n", "Eve\u{7F}"] {
            #expect(throws: MailValidationError.self, "\(name.debugDescription)") { try MailAddress("eve@example.com", displayName: name) }
        }
        for id in ["a@b\r\nBcc: c@d", "<a@b> x", "a b@c", "nobrackets", "<a@b@c>"] {
            #expect(throws: MailValidationError.self, "\(id.debugDescription)") {
                try MailMessage(from: from, to: to, subject: "s", text: "x", messageID: id)
            }
        }
        // Bodies may hold anything: header-like lines, a fake boundary, a lone dot. None of it reaches the headers.
        let hostile = "x\r\n\r\nBcc: victim@example.com\r\n--=_GuestPass_fake\r\nContent-Type: text/html\r\n.\r\n"
        let message = try MailMessage(from: from, to: to, subject: "s", text: hostile, html: hostile, messageID: "a@b")
        let (headers, body) = Self.split(message.rendered())
        #expect(headers.map(\.0) == ["Date", "From", "To", "Subject", "Message-ID", "MIME-Version", "Content-Type"])
        #expect(body.components(separatedBy: "--\(message.boundary)").count == 4)
        #expect(!body.contains("\r\n--=_GuestPass_fake\r\n"), "a body line that looks like a boundary is encoded (=3D)")
    }
}
