import Foundation
import GuestPassCrypto

/// The stand-in's answer, independent of the HTTP framework.
struct StandInReply: Sendable {
    var status: Int
    var contentType: String?
    var body: [UInt8]

    static func text(_ status: Int, _ text: String) -> StandInReply {
        StandInReply(status: status, contentType: "text/plain; charset=UTF-8", body: Array(text.utf8))
    }

    static func json(_ value: some Encodable, status: Int = 200) -> StandInReply {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(value)).map(Array.init) ?? Array("{}".utf8)
        return StandInReply(status: status, contentType: "application/json", body: body)
    }

    static let empty = StandInReply(status: 200, contentType: nil, body: [])
}

/// Apple's literal answers.
enum AppleMessage {
    static let badDeviceToken = "Missing or incorrectly formatted device token payload"
    static let badBits = "Missing or incorrectly formatted bits"
    static let badTimestamp = "Missing or incorrectly formatted time stamp"
    static let badAuthorizationFormat = "Missing or badly formatted authorization token"
    static let unverifiedAuthorization = "Unable to verify authorization token"
    static let badPayload = "Missing or incorrectly formatted payload"
    static let badTransactionID = "Missing or incorrectly formatted transaction id"
    static let bitStateNotFound = "Failed to find bit state"
    static let methodNotAllowed = "Method Not Allowed"

    /// The default body of an injected failure.
    static func forStatus(_ status: Int) -> String {
        switch status {
        case 400: self.badPayload
        case 401: self.unverifiedAuthorization
        case 403: "Forbidden"
        case 405: self.methodNotAllowed
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Error \(status)"
        }
    }
}

/// The DeviceCheck endpoints.
enum StandInEndpoint: String, CaseIterable, Sendable {
    case validateDeviceToken = "validate_device_token"
    case queryTwoBits = "query_two_bits"
    case updateTwoBits = "update_two_bits"
}

/// Apple's request checks and answers, in Apple's order as far as it is known: authorization, payload, device
/// token, time stamp, transaction id, bits.
struct DeviceCheckProtocol: Sendable {
    /// How far `iat` may lie in the past, and `timestamp` on either side of now.
    static let maximumAge: TimeInterval = 3600
    /// How far `iat` may lie in the future.
    static let maximumFutureSkew: TimeInterval = 60

    let configuration: StandInConfiguration
    let state: StandInState
    private let verifier: JWTVerifier

    init(configuration: StandInConfiguration, state: StandInState) {
        self.configuration = configuration
        self.state = state
        do {
            self.verifier = try JWTVerifier(
                keys: [.es256(configuration.publicKey, keyID: configuration.keyID)],
                issuers: [configuration.teamID],
                audiences: nil,
                leeway: Self.maximumFutureSkew,
                requiresExpiration: false
            )
        } catch {
            preconditionFailure("a single key cannot repeat a kid: \(error)")
        }
    }

    func answer(_ endpoint: StandInEndpoint, authorization: String?, body: [UInt8], now: Date = Date()) async -> StandInReply {
        if let refusal = self.checkAuthorization(authorization, now: now) { return refusal }
        guard let fields = try? JSONDecoder().decode(RequestFields.self, from: Data(body)) else {
            return .text(400, AppleMessage.badPayload)
        }
        guard let token = fields.deviceToken, let deviceID = StandInState.deviceID(fromToken: token) else {
            return .text(400, AppleMessage.badDeviceToken)
        }
        let nowMilliseconds = Int64(now.timeIntervalSince1970 * 1000)
        guard let timestamp = fields.timestamp, abs(timestamp - nowMilliseconds) <= Int64(Self.maximumAge * 1000) else {
            return .text(400, AppleMessage.badTimestamp)
        }
        guard let transactionID = fields.transactionID, !transactionID.isEmpty else {
            return .text(400, AppleMessage.badTransactionID)
        }

        switch endpoint {
        case .validateDeviceToken:
            return .empty
        case .queryTwoBits:
            guard let device = await self.state.device(deviceID) else { return .text(200, AppleMessage.bitStateNotFound) }
            return .json(BitsReply(bit0: device.bit0, bit1: device.bit1, last_update_time: device.lastUpdateTime))
        case .updateTwoBits:
            guard !fields.hasMalformedBits, fields.bit0 != nil || fields.bit1 != nil else {
                return .text(400, AppleMessage.badBits)
            }
            await self.state.setBits(deviceID: deviceID, bit0: fields.bit0, bit1: fields.bit1, at: now)
            return .empty
        }
    }

    /// Nil if the `Authorization` header carries a valid JWT; otherwise Apple's 400 (absent or garbled) or 401.
    func checkAuthorization(_ header: String?, now: Date) -> StandInReply? {
        let malformed = StandInReply.text(400, AppleMessage.badAuthorizationFormat)
        let unverified = StandInReply.text(401, AppleMessage.unverifiedAuthorization)
        guard let header, header.count > 7, header.prefix(7).lowercased() == "bearer " else { return malformed }
        let token = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
        guard token.split(separator: ".", omittingEmptySubsequences: false).count == 3 else { return malformed }
        let verified: VerifiedJWT
        do {
            verified = try self.verifier.verify(token, now: now)
        } catch let error as JWTError where error.reason == .malformed {
            return malformed
        } catch {
            return unverified
        }
        guard verified.header.keyID == self.configuration.keyID,
            let issuedAt = (try? JSONDecoder().decode(IssuedAt.self, from: verified.payload))?.iat,
            issuedAt >= now.timeIntervalSince1970 - Self.maximumAge,
            issuedAt <= now.timeIntervalSince1970 + Self.maximumFutureSkew
        else { return unverified }
        return nil
    }
}

/// The JSON answer of `query_two_bits`.
struct BitsReply: Codable {
    let bit0: Bool
    let bit1: Bool
    let last_update_time: String
}

private struct IssuedAt: Decodable {
    let iat: Double?
}

/// The request body; a field of the wrong JSON type counts as missing.
private struct RequestFields: Decodable {
    let deviceToken: String?
    let transactionID: String?
    let timestamp: Int64?
    let bit0: Bool?
    let bit1: Bool?
    /// A bit is present but not a JSON boolean.
    let hasMalformedBits: Bool

    private enum CodingKeys: String, CodingKey {
        case deviceToken = "device_token"
        case transactionID = "transaction_id"
        case timestamp, bit0, bit1
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.deviceToken = (try? container.decodeIfPresent(String.self, forKey: .deviceToken)) ?? nil
        self.transactionID = (try? container.decodeIfPresent(String.self, forKey: .transactionID)) ?? nil
        self.timestamp = (try? container.decodeIfPresent(Int64.self, forKey: .timestamp)) ?? nil
        self.bit0 = (try? container.decodeIfPresent(Bool.self, forKey: .bit0)) ?? nil
        self.bit1 = (try? container.decodeIfPresent(Bool.self, forKey: .bit1)) ?? nil
        self.hasMalformedBits = (container.contains(.bit0) && self.bit0 == nil) || (container.contains(.bit1) && self.bit1 == nil)
    }
}
