import CCurl
import Foundation

/// Why a message was not handed over, classified for the outbox: `isPermanent` failures are not retried, every other
/// one is retried with backoff.
///
/// The description is built from libcurl's error code (`curl_easy_strerror`), the text libcurl left in
/// `CURLOPT_ERRORBUFFER` (e.g. `RCPT failed: 550`, `Authentication failed: 535`, a TLS verification reason) and the last
/// SMTP reply code. libcurl writes neither the password nor the message into that buffer; as a second guard, any
/// occurrence of the password is replaced by `<redacted>` before the error is made.
public struct SMTPError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        /// The host could not be resolved or no connection could be made.
        case connect
        /// TLS failed: STARTTLS refused or not offered, the certificate not trusted, the handshake failed.
        case tls
        /// The server refused the credentials (or offered no mechanism libcurl can use with them).
        case authentication
        /// The server answered a command with this SMTP reply code (4xx or 5xx).
        case rejected(code: Int)
        /// Connecting or the whole send took longer than `SMTPSettings.timeout`.
        case timeout
        /// Anything else: the connection dropped, the client was shut down, the send was cancelled before it started.
        case other
    }

    public let kind: Kind
    /// libcurl's `CURLcode`, when the failure came from libcurl.
    public let curlCode: Int?
    /// The last SMTP reply code of the attempt (`CURLINFO_RESPONSE_CODE`), when there was one.
    public let replyCode: Int?
    /// What happened, in words: never the password or the message.
    public let message: String

    init(_ kind: Kind, _ message: String, curlCode: Int? = nil, replyCode: Int? = nil) {
        self.kind = kind
        self.message = message
        self.curlCode = curlCode
        self.replyCode = replyCode
    }

    /// Whether retrying the same message cannot help: a 5xx reply (the sender, the recipient or the message refused)
    /// or refused credentials. Connection, TLS, timeout and 4xx failures are transient.
    public var isPermanent: Bool {
        switch self.kind {
        case .authentication: return true
        case .rejected(let code): return (500...599).contains(code)
        case .connect, .tls, .timeout, .other: return false
        }
    }

    public var description: String {
        var text = "SMTPError(\(self.kind)"
        if let curlCode { text += ", curl \(curlCode)" }
        if let replyCode { text += ", reply \(replyCode)" }
        return text + "): \(self.message)"
    }

    /// Classifies a failed `curl_easy_perform`: libcurl's `CURLcode` (as a number), the last SMTP reply (0 for none)
    /// and the error buffer's text.
    static func fromCurl(_ curlCode: Int, replyCode: Int, detail: String, password: String?) -> SMTPError {
        let code = CURLcode(rawValue: .init(truncatingIfNeeded: curlCode))
        var message = String(cString: curl_easy_strerror(code))
        if !detail.isEmpty { message += ": \(detail)" }
        if let password, !password.isEmpty {
            message = message.replacingOccurrences(of: password, with: "<redacted>")
        }
        let reply = replyCode > 0 ? replyCode : nil
        let kind: Kind
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            kind = .connect
        case CURLE_OPERATION_TIMEDOUT:
            kind = .timeout
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_USE_SSL_FAILED, CURLE_SSL_CACERT_BADFILE,
            CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            kind = .tls
        case CURLE_LOGIN_DENIED:
            kind = .authentication
        default:
            // MAIL, RCPT, DATA and the reply after the message end in CURLE_SEND_ERROR or CURLE_WEIRD_SERVER_REPLY;
            // the reply code tells a refusal from a dropped connection.
            if let reply, reply >= 400 {
                kind = .rejected(code: reply)
            } else {
                kind = .other
            }
        }
        return SMTPError(kind, message, curlCode: curlCode, replyCode: reply)
    }
}
