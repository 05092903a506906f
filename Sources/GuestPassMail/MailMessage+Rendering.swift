extension MailMessage {
    /// The message as RFC 5322 + MIME bytes, ready for SMTP `DATA`: CRLF line ends, no line longer than 998 bytes.
    ///
    /// Headers, in order: `Date`, `From`, `To`, `Subject` (RFC 2047 `=?UTF-8?B?…?=` encoded-words when not plain
    /// ASCII or too long for one line), `Message-ID`, `MIME-Version: 1.0`, then either a single `text/plain` part or
    /// `multipart/alternative` with `text/plain` then `text/html`; every part is UTF-8, quoted-printable (at most 76
    /// bytes a line).
    ///
    /// The bytes are not dot-stuffed: libcurl's SMTP upload doubles a `.` at the start of every line (its
    /// `Curl_smtp_escape_eob`, starting as if after a CRLF, so the first line too) and appends the terminating
    /// `CRLF . CRLF` itself.
    public func rendered() -> [UInt8] {
        var output: [UInt8] = []
        func line(_ text: String) {
            output.append(contentsOf: text.utf8)
            output.append(contentsOf: MIME.crlf)
        }
        line("Date: \(MIME.date(self.date))")
        line("From: \(MIME.mailbox(self.from))")
        line("To: \(MIME.mailbox(self.to))")
        line("Subject: \(MIME.headerText(self.subject, nameLength: "Subject".utf8.count))")
        line("Message-ID: <\(self.messageID)>")
        line("MIME-Version: 1.0")
        guard let html = self.html else {
            line("Content-Type: text/plain; charset=UTF-8")
            line("Content-Transfer-Encoding: quoted-printable")
            line("")
            output.append(contentsOf: MIME.quotedPrintable(self.text))
            return output
        }
        line("Content-Type: multipart/alternative;\r\n boundary=\"\(self.boundary)\"")
        line("")
        for (subtype, body) in [("plain", self.text), ("html", html)] {
            line("--\(self.boundary)")
            line("Content-Type: text/\(subtype); charset=UTF-8")
            line("Content-Transfer-Encoding: quoted-printable")
            line("")
            output.append(contentsOf: MIME.quotedPrintable(body))
        }
        line("--\(self.boundary)--")
        return output
    }
}
