public import Foundation

/// The stand-in's record of one device: its two bits, when they last changed and how often they were set.
public struct StandInDevice: Sendable, Hashable {
    /// The first bit.
    public var bit0: Bool
    /// The second bit.
    public var bit1: Bool
    /// When the bits were last updated.
    public var lastUpdated: Date
    /// How many `update_two_bits` calls (or `StandInState.setBits`) this device received.
    public var updates: Int

    /// Creates a record.
    public init(bit0: Bool, bit1: Bool, lastUpdated: Date, updates: Int) {
        self.bit0 = bit0
        self.bit1 = bit1
        self.lastUpdated = lastUpdated
        self.updates = updates
    }

    /// The month of the last update as Apple reports it: `YYYY-MM`, UTC.
    public var lastUpdateTime: String { Self.month(of: self.lastUpdated) }

    /// `YYYY-MM` (UTC) of `date`.
    public static func month(of date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = calendar.dateComponents([.year, .month], from: date)
        let year = components.year ?? 1970
        let month = components.month ?? 1
        return "\(year)-\(month < 10 ? "0" : "")\(month)"
    }
}

/// A planned misbehaviour: the next `count` requests to the matching endpoints wait `delay`, then answer `status`
/// with `body` (or are answered normally when `status` is nil).
public struct StandInFailure: Sendable, Hashable {
    /// The status to answer, or nil to only delay.
    public var status: Int?
    /// How many requests it applies to.
    public var count: Int
    /// How long to wait before answering.
    public var delay: Duration
    /// The body to answer with `status` (text/plain); nil uses a default text for the status.
    public var body: String?
    /// The endpoints it applies to (`query_two_bits`, `update_two_bits`, `validate_device_token`); nil means all.
    public var endpoints: Set<String>?

    /// Creates a failure plan.
    public init(status: Int?, count: Int = 1, delay: Duration = .zero, body: String? = nil, endpoints: Set<String>? = nil) {
        self.status = status
        self.count = count
        self.delay = delay
        self.body = body
        self.endpoints = endpoints
    }

    func applies(to endpoint: String) -> Bool {
        self.count > 0 && (self.endpoints.map { $0.contains(endpoint) } ?? true)
    }
}

/// One request the stand-in answered on a `/v1` endpoint, kept for tests (the JWT and body as received).
public struct StandInRequest: Sendable {
    /// `query_two_bits`, `update_two_bits` or `validate_device_token`.
    public var endpoint: String
    /// The `Authorization` header, if any.
    public var authorization: String?
    /// The request body as received.
    public var body: [UInt8]
    /// The status the stand-in answered.
    public var status: Int
    /// When it was received.
    public var receivedAt: Date

    /// The bearer token of the `Authorization` header, if it has that form.
    public var bearerToken: String? {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else { return nil }
        return String(authorization.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
    }
}
