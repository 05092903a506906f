import CCurl

/// The single checker for libcurl's configuration calls (`curl_easy_setopt` through the shim's typed wrappers).
///
/// A refused option is a programming or build error (an option this libcurl does not know, or out of memory), never
/// a network failure; it is reported as `SMTPError.Kind.other` naming the option, without its value (which may be
/// the password).
enum Curl {
    static func check(_ code: CURLcode, _ option: String) throws(SMTPError) {
        guard code == CURLE_OK else {
            throw SMTPError(
                .other,
                "curl_easy_setopt(\(option)) failed: \(String(cString: curl_easy_strerror(code)))",
                curlCode: Int(code.rawValue)
            )
        }
    }
}

/// libcurl's process-wide set-up (`curl_global_init`), done exactly once, before the first easy handle; never undone
/// (`curl_global_cleanup` is not called: other code in the process may still use libcurl).
enum CurlGlobal {
    /// The outcome of the one `curl_global_init` call (Swift runs a global's initializer once, thread-safely).
    private static let initialization: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    static func ensureInitialized() throws(SMTPError) {
        let code = Self.initialization
        guard code == CURLE_OK else {
            throw SMTPError(.other, "curl_global_init failed: \(String(cString: curl_easy_strerror(code)))", curlCode: Int(code.rawValue))
        }
    }
}
