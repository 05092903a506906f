import Foundation
import GuestPassJSON
import GuestPassStore
import Hummingbird

/// What the email routes share: the code issuer, the password pool and the client-address buckets.
struct EmailServices: Sendable {
    let codes: EmailCodeIssuer
    let hasher: PasswordHasher
    /// Requests that mail a code, verifications, and password sign-ins: per client address, per five minutes.
    let sendBucket: ClientBucket
    let verifyBucket: ClientBucket
    let passwordBucket: ClientBucket

    init(configuration: AuthConfiguration, hasher: PasswordHasher = .shared) {
        self.codes = EmailCodeIssuer(refreshTokenKey: configuration.refreshTokenKey)
        self.hasher = hasher
        self.sendBucket = ClientBucket(burst: configuration.emailSendsPerIP, perSecond: Double(configuration.emailSendsPerIP) / 300)
        self.verifyBucket = ClientBucket(burst: configuration.emailVerifiesPerIP, perSecond: Double(configuration.emailVerifiesPerIP) / 300)
        self.passwordBucket = ClientBucket(
            burst: configuration.passwordSignInsPerIP, perSecond: Double(configuration.passwordSignInsPerIP) / 300)
    }
}

/// The email routes' reading of request bodies and queries: addresses, passwords, PKCE challenges, `redirect_to`.
/// Every refusal is a 4xx in GoTrue's envelope, before anything is written.
enum EmailInput {
    /// The address in `body[key]`, trimmed and lower-cased: a plain `local@domain` of at most 255 characters, as
    /// GoTrue checks it (`guestpass.email_address` repeats the check in SQL).
    static func address(_ body: [String: JSONValue], _ key: String = "email") throws -> String {
        guard let value = body[key], value != .null else { throw APIError.validation("An email address is required") }
        guard let text = value.stringValue else { throw APIError.validation("\(key) must be a string") }
        let address = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard Self.isAddress(address) else {
            throw APIError(.badRequest, code: GoTrueCode.validationFailed, message: "Unable to validate email address: invalid format")
        }
        return address
    }

    /// Whether `address` is a plain address: one `@`, a local part without spaces, controls or `<>()[],;:"\`, and a
    /// domain of at least two dot-separated labels of letters, digits and inner hyphens.
    static func isAddress(_ address: String) -> Bool {
        guard address.utf8.count <= 255, let at = address.lastIndex(of: "@") else { return false }
        let local = address[..<at]
        let domain = address[address.index(after: at)...]
        let forbidden = Set(#" <>()[],;:"\@"#)
        guard !local.isEmpty, local.utf8.count <= 64,
            local.allSatisfy({ !forbidden.contains($0) && !$0.isWhitespace && $0.asciiValue.map { $0 >= 0x21 && $0 < 0x7f } ?? true })
        else { return false }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2
            && labels.allSatisfy { label in
                !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                    && label.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" }
            }
    }

    /// The password in `body["password"]`: a string of at most 72 bytes (bcrypt's and GoTrue's cap).
    static func password(_ body: [String: JSONValue]) throws -> String? {
        switch body["password"] {
        case nil, .null?: return nil
        case .string(let password)?:
            guard password.utf8.count <= 72 else { throw APIError.validation("Password cannot be longer than 72 characters") }
            return password
        default: throw APIError.validation("password must be a string")
        }
    }

    /// Refuses `password` unless it meets the app's rules: 422 `weak_password` with GoTrue's `reasons`.
    static func checkStrength(_ password: String, _ settings: EmailSettings) throws {
        var reasons: [String] = []
        var messages: [String] = []
        if password.count < settings.passwordMinLength {
            reasons.append("length")
            messages.append("Password should be at least \(settings.passwordMinLength) characters.")
        }
        let missing = settings.passwordRequiredCharacters.filter { set in !password.contains(where: { set.contains($0) }) }
        if !missing.isEmpty {
            reasons.append("characters")
            messages.append("Password should contain at least one character of each: \(missing.joined(separator: ", ")).")
        }
        guard reasons.isEmpty else {
            var error = APIError(.unprocessableContent, code: GoTrueCode.weakPassword, message: messages.joined(separator: " "))
            error.weakPasswordReasons = reasons
            throw error
        }
    }

    /// The PKCE challenge of a request that mails a code, or nil (implicit flow). Both fields or neither, as GoTrue.
    static func pkce(_ body: [String: JSONValue]) throws -> PKCEChallenge? {
        let challenge = body["code_challenge"].flatMap { $0 == .null ? nil : $0 }
        let method = body["code_challenge_method"].flatMap { $0 == .null ? nil : $0 }
        guard challenge != nil || method != nil else { return nil }
        guard let challenge, let method else {
            throw APIError.validation("PKCE flow requires code_challenge_method and code_challenge")
        }
        guard let text = challenge.stringValue, (43...128).contains(text.utf8.count), text.utf8.allSatisfy({ $0.isVerifierCharacter })
        else { throw APIError.validation("code_challenge must be 43 to 128 characters of A-Z a-z 0-9 . _ ~ -") }
        guard let name = method.stringValue?.lowercased(), name == "s256" || name == "plain" else {
            throw APIError.validation("code_challenge_method must be s256 or plain")
        }
        return PKCEChallenge(challenge: text, method: name)
    }

    /// `redirect_to` of the query (the router has decoded it once): at most 2048 characters, no control character (a
    /// NUL would be cut short by libpq); the database keeps it only when the app allows it.
    static func redirectTo(_ request: Request) throws -> String? {
        guard let value = try self.queryValue(request, "redirect_to", limit: 2048) else { return nil }
        return value
    }

    /// The query parameter `name`, nil when absent or empty: at most `limit` characters (code points, as JSON Schema's
    /// maxLength counts) and no control character, else 400.
    static func queryValue(_ request: Request, _ name: String, limit: Int) throws -> String? {
        guard let value = request.uri.queryParameters[Substring(name)].map(String.init), !value.isEmpty else { return nil }
        guard value.unicodeScalars.count <= limit, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APIError.validation("\(name) must be at most \(limit) characters without control characters")
        }
        return value
    }

    /// `data` without the keys a guest's sign-up reads as device facts and secrets (`device_id`, `device`,
    /// `transfer_code`, `recovery_code`): an app sending its usual data with an email sign-up must not get a device
    /// secret stored in the clear in user_metadata, answered, and signed into every access token.
    static func withoutDeviceKeys(_ data: [String: JSONValue]) -> [String: JSONValue] {
        data.filter { !["device_id", "device", "transfer_code", "recovery_code"].contains($0.key) }
    }

    /// An optional JSON object (`data`, `options.data`).
    static func object(_ value: JSONValue?, _ name: String) throws -> [String: JSONValue]? {
        switch value {
        case nil, .null?: return nil
        case .object(let members)?: return members
        default: throw APIError.validation("\(name) must be a JSON object")
        }
    }

    /// A one-time code as sent (`token`), trimmed: any string of at most 64 bytes (one that is not the code cannot
    /// match, and still counts as a wrong try).
    static func code(_ value: JSONValue?) throws -> String {
        guard let text = value?.stringValue, !text.isEmpty, text.utf8.count <= 64 else { throw APIError.validation("token is required") }
        return text.trimmingCharacters(in: .whitespaces)
    }
}

extension UInt8 {
    /// A character of RFC 7636's unreserved set (code verifiers and challenges).
    fileprivate var isVerifierCharacter: Bool {
        (0x41...0x5a).contains(self) || (0x61...0x7a).contains(self) || (0x30...0x39).contains(self) || self == 0x2d || self == 0x2e
            || self == 0x5f || self == 0x7e
    }
}
