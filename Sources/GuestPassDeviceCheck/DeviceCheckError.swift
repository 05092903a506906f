/// A failed DeviceCheck call, classified for the caller.
///
/// Only `.badDeviceToken` says anything about the device (its token is missing, malformed or not from a genuine
/// device); every other kind is our configuration, our bug or a transient problem and must never be reported as a
/// fraud verdict. The description never contains the device token or the authorization JWT.
public struct DeviceCheckError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// The device token is malformed (rejected locally) or Apple answered 400 naming the device token.
        case badDeviceToken
        /// Apple answered 400 for another reason (bits, time stamp, payload, JWT format): our bug. Carries Apple's
        /// message (shortened).
        case badRequest(String)
        /// Apple answered 401 or 403: the key, `kid` or team id is wrong, or the key lacks DeviceCheck. Configuration.
        case unauthorized
        /// Apple answered 429: back off.
        case rateLimited
        /// Apple answered 5xx, or the request timed out or could not connect.
        case unavailable
        /// Apple answered 200 with a body that is neither the expected JSON nor "bit state not found", or an
        /// unexpected status.
        case malformedResponse
    }

    /// What went wrong.
    public let kind: Kind
    /// The HTTP status Apple answered, if there was an answer.
    public let status: Int?
    /// A short technical detail for logs (never a token).
    public let detail: String

    /// Creates an error.
    public init(_ kind: Kind, status: Int? = nil, detail: String = "") {
        self.kind = kind
        self.status = status
        self.detail = detail
    }

    /// Whether the same call may succeed later (rate limiting and outages).
    public var isRetryable: Bool {
        switch self.kind {
        case .rateLimited, .unavailable: true
        case .badDeviceToken, .badRequest, .unauthorized, .malformedResponse: false
        }
    }

    public var description: String {
        let name: String
        switch self.kind {
        case .badDeviceToken: name = "badDeviceToken"
        case .badRequest(let message): name = "badRequest(\(message))"
        case .unauthorized: name = "unauthorized"
        case .rateLimited: name = "rateLimited"
        case .unavailable: name = "unavailable"
        case .malformedResponse: name = "malformedResponse"
        }
        var parts = [name]
        if let status = self.status { parts.append("HTTP \(status)") }
        if !self.detail.isEmpty { parts.append(self.detail) }
        return "DeviceCheckError(" + parts.joined(separator: ", ") + ")"
    }
}
