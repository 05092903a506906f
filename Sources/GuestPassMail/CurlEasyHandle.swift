import CCurl

/// One libcurl easy handle set up for one `SMTPSettings`, and the sole owner of it: `curl_easy_cleanup` frees it (and
/// closes its cached SMTP connection, sending `QUIT`) when the last reference goes, on every path — a failed
/// configuration or a failed send included, since the caller then simply drops the handle.
///
/// **Connection reuse.** Without a share or multi handle, libcurl keeps the connection of a finished transfer in the
/// easy handle's own connection cache; the next `curl_easy_perform` on the same handle with the same URL and
/// credentials reuses it (no new TCP, TLS or AUTH: the next transaction starts at `MAIL FROM`), after checking that
/// the socket is still alive and younger than `CURLOPT_MAXAGE_CONN` (libcurl's default, 118 s). A failed transfer
/// marks its connection for closing (libcurl's `smtp_done`), and `SMTPClient` discards the handle anyway.
///
/// **Threading.** `send` blocks the calling thread for up to the settings' timeout; it must run on a thread that may
/// block, never on Swift's cooperative pool. libcurl allows one handle on any thread, one thread at a time:
/// `SMTPClient` hands a handle to exactly one sender at a time.
///
/// **Secrets.** `CURLOPT_VERBOSE` is never set, since its trace would show the AUTH exchange.
final class CurlEasyHandle {
    private let pointer: UnsafeMutableRawPointer
    /// `CURLOPT_ERRORBUFFER`: libcurl writes the reason of a failure here; it lives exactly as long as the handle.
    private let errorBuffer: UnsafeMutablePointer<CChar>
    let settings: SMTPSettings
    /// When the handle last finished a send (for the idle limit).
    var lastUsed = ContinuousClock.now
    /// How many messages this handle has sent (more than one means its connection was reused).
    private(set) var sends = 0

    private init?(settings: SMTPSettings) {
        guard let pointer = curl_easy_init() else { return nil }
        self.pointer = pointer
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        self.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        self.settings = settings
    }

    deinit {
        curl_easy_cleanup(self.pointer)
        self.errorBuffer.deallocate()
    }

    /// A new handle configured for `settings`. A failure frees the handle before throwing.
    static func make(for settings: SMTPSettings) throws(SMTPError) -> CurlEasyHandle {
        try CurlGlobal.ensureInitialized()
        guard let handle = CurlEasyHandle(settings: settings) else {
            throw SMTPError(.other, "curl_easy_init failed")
        }
        try handle.configure()
        return handle
    }

    /// The options that stay the same for every message sent through this handle.
    private func configure() throws(SMTPError) {
        let settings = self.settings
        try self.set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(self.errorBuffer), "CURLOPT_ERRORBUFFER")
        try self.set(CURLOPT_NOSIGNAL, 1, "CURLOPT_NOSIGNAL")
        try self.set(CURLOPT_PROTOCOLS_STR, "smtp,smtps", "CURLOPT_PROTOCOLS_STR")
        try self.set(CURLOPT_URL, settings.url, "CURLOPT_URL")
        let useSSL = settings.security == .plain ? CURLUSESSL_NONE : CURLUSESSL_ALL
        try self.set(CURLOPT_USE_SSL, Int(useSSL.rawValue), "CURLOPT_USE_SSL")
        if let caFile = settings.caFile { try self.set(CURLOPT_CAINFO, caFile, "CURLOPT_CAINFO") }
        if let username = settings.username {
            try self.set(CURLOPT_USERNAME, username, "CURLOPT_USERNAME")
            try self.set(CURLOPT_PASSWORD, settings.password ?? "", "CURLOPT_PASSWORD")
        }
        let milliseconds = Int(settings.timeout / .milliseconds(1))
        try self.set(CURLOPT_CONNECTTIMEOUT_MS, milliseconds, "CURLOPT_CONNECTTIMEOUT_MS")
        try self.set(CURLOPT_TIMEOUT_MS, milliseconds, "CURLOPT_TIMEOUT_MS")
        try self.set(CURLOPT_UPLOAD, 1, "CURLOPT_UPLOAD")
        try Curl.check(gp_curl_setopt_read_function(self.pointer, readPayload), "CURLOPT_READFUNCTION")
    }

    /// Sends `payload` (a rendered message) from `sender` to `recipient` (bare addresses); blocks until the server
    /// accepted the message (`250` after the data) or the send failed.
    ///
    /// The recipient list (`curl_slist`) and the payload's box (`CURLOPT_READDATA`) live exactly as long as the
    /// transfer: both options are cleared and both freed on every path before this returns.
    func send(sender: String, recipient: String, payload: [UInt8]) throws(SMTPError) {
        self.errorBuffer[0] = 0
        guard let recipients = curl_slist_append(nil, "<\(recipient)>") else {
            throw SMTPError(.other, "curl_slist_append failed")
        }
        let source = Unmanaged.passRetained(UploadSource(payload))
        defer {
            _ = gp_curl_setopt_slist(self.pointer, CURLOPT_MAIL_RCPT, nil)
            _ = gp_curl_setopt_pointer(self.pointer, CURLOPT_READDATA, nil)
            curl_slist_free_all(recipients)
            source.release()
        }
        try self.set(CURLOPT_MAIL_FROM, "<\(sender)>", "CURLOPT_MAIL_FROM")
        try Curl.check(gp_curl_setopt_slist(self.pointer, CURLOPT_MAIL_RCPT, recipients), "CURLOPT_MAIL_RCPT")
        try self.set(CURLOPT_READDATA, pointer: source.toOpaque(), "CURLOPT_READDATA")
        try Curl.check(gp_curl_setopt_off(self.pointer, CURLOPT_INFILESIZE_LARGE, curl_off_t(payload.count)), "CURLOPT_INFILESIZE_LARGE")

        let code = curl_easy_perform(self.pointer)
        self.lastUsed = .now
        guard code == CURLE_OK else {
            var reply = 0
            _ = gp_curl_getinfo_long(self.pointer, CURLINFO_RESPONSE_CODE, &reply)
            let detail = String(cString: self.errorBuffer)
            throw SMTPError.fromCurl(Int(code.rawValue), replyCode: reply, detail: detail, password: self.settings.password)
        }
        let sent = source.takeUnretainedValue().offset
        guard sent == payload.count else {
            throw SMTPError(.other, "libcurl read \(sent) of the message's \(payload.count) bytes")
        }
        self.sends += 1
    }

    // MARK: Options

    private func set(_ option: CURLoption, _ value: Int, _ name: String) throws(SMTPError) {
        try Curl.check(gp_curl_setopt_long(self.pointer, option, value), name)
    }

    private func set(_ option: CURLoption, _ value: String, _ name: String) throws(SMTPError) {
        try Curl.check(gp_curl_setopt_string(self.pointer, option, value), name)
    }

    private func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?, _ name: String) throws(SMTPError) {
        try Curl.check(gp_curl_setopt_pointer(self.pointer, option, value), name)
    }
}

/// The bytes of one message and how far libcurl has read them; passed to the read callback as `CURLOPT_READDATA`.
private final class UploadSource {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }
}

/// `CURLOPT_READFUNCTION`: copies the next bytes of the `UploadSource` in `userdata` into libcurl's buffer; 0 at the
/// end (libcurl then dot-stuffs what it read and sends the final `CRLF . CRLF`).
private let readPayload: curl_read_callback = { buffer, size, count, userdata in
    guard let buffer, let userdata else { return Int(CURL_READFUNC_ABORT) }
    let source = Unmanaged<UploadSource>.fromOpaque(userdata).takeUnretainedValue()
    let length = min(size * count, source.bytes.count - source.offset)
    guard length > 0 else { return 0 }
    source.bytes.withUnsafeBufferPointer { bytes in
        UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + source.offset, byteCount: length)
    }
    source.offset += length
    return length
}
