public import AsyncHTTPClient
import Foundation
import GuestPassCrypto
public import Logging
import NIOCore
import NIOHTTP1

/// A client for Apple's DeviceCheck two-bits API (`validate_device_token`, `query_two_bits`, `update_two_bits`).
///
/// Every call POSTs `{"device_token","transaction_id","timestamp"}` (a fresh UUID v4, milliseconds since 1970) with
/// `Authorization: Bearer <ES256 JWT>`; the JWT is shared by all calls of one client and re-minted every 20 minutes.
/// If Apple rejects a reused JWT with 401, the call is retried once with a new one.
///
/// Failures are thrown as `DeviceCheckError`; only `.badDeviceToken` concerns the device. The client never retries
/// outages itself: check `DeviceCheckError.isRetryable`.
public struct DeviceCheckClient: Sendable {
    /// The configuration this client was made with.
    public let configuration: DeviceCheckConfiguration
    private let httpClient: HTTPClient
    private let logger: Logger
    private let tokens: AuthorizationTokenCache

    /// The largest response body read from Apple.
    static let maximumResponseSize = 64 * 1024

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - configuration: team, key, server and time limit.
    ///   - httpClient: the HTTP client (default: the process-wide shared client; the caller owns any other).
    ///   - logger: where to log calls (never the device token or the JWT).
    public init(configuration: DeviceCheckConfiguration, httpClient: HTTPClient = .shared, logger: Logger) {
        self.configuration = configuration
        self.httpClient = httpClient
        self.logger = logger
        self.tokens = AuthorizationTokenCache(
            teamID: configuration.teamID,
            keyID: configuration.keyID,
            privateKey: configuration.privateKey
        )
    }

    /// Checks that `deviceToken` comes from a genuine Apple device running one of the team's apps.
    ///
    /// - Throws: `DeviceCheckError`; `.badDeviceToken` if it does not.
    public func validateDeviceToken(_ deviceToken: String) async throws {
        _ = try await self.send(.validateDeviceToken, deviceToken: deviceToken)
    }

    /// Reads the device's two bits. A device whose bits were never set reads as `DeviceBits.neverSet`.
    ///
    /// - Throws: `DeviceCheckError`.
    public func queryTwoBits(_ deviceToken: String) async throws -> DeviceBits {
        let body = try await self.send(.queryTwoBits, deviceToken: deviceToken)
        return try Self.parseBits(body)
    }

    /// Sets both of the device's bits (both are always sent: what Apple does to an omitted bit is undocumented).
    ///
    /// - Throws: `DeviceCheckError`.
    public func updateTwoBits(_ deviceToken: String, bit0: Bool, bit1: Bool) async throws {
        _ = try await self.send(.updateTwoBits, deviceToken: deviceToken, bits: (bit0, bit1))
    }

    // MARK: Request

    enum Endpoint: String, Sendable {
        case validateDeviceToken = "validate_device_token"
        case queryTwoBits = "query_two_bits"
        case updateTwoBits = "update_two_bits"
    }

    /// The JSON body of every request (`bit0`/`bit1` only on update).
    struct RequestBody: Encodable {
        let device_token: String
        let transaction_id: String
        let timestamp: Int64
        let bit0: Bool?
        let bit1: Bool?
    }

    private struct RawResponse: Sendable {
        let status: Int
        let body: [UInt8]
    }

    private func send(_ endpoint: Endpoint, deviceToken: String, bits: (Bool, Bool)? = nil) async throws -> [UInt8] {
        guard DeviceToken.isWellFormed(deviceToken) else {
            throw DeviceCheckError(.badDeviceToken, detail: "rejected locally: not 1–4096 bytes of standard base64")
        }
        let transactionID = UUID().uuidString.lowercased()
        var logger = self.logger
        logger[metadataKey: "devicecheck_endpoint"] = "\(endpoint.rawValue)"
        logger[metadataKey: "devicecheck_transaction_id"] = "\(transactionID)"

        let body: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes]
            body = try encoder.encode(
                RequestBody(
                    device_token: deviceToken,
                    transaction_id: transactionID,
                    timestamp: Int64((Date().timeIntervalSince1970 * 1000).rounded()),
                    bit0: bits?.0,
                    bit1: bits?.1
                )
            )
        } catch {
            throw DeviceCheckError(.badRequest("could not encode the request"), detail: "\(error)")
        }

        let started = ContinuousClock.now
        var authorization = try await self.authorizationToken()
        var response = try await self.post(endpoint, body: body, authorization: authorization.value, logger: logger)
        if response.status == 401, !authorization.isFresh {
            // A reused JWT may have been refused as expired: mint a new one and try once more.
            await self.tokens.invalidate(authorization.value)
            authorization = try await self.authorizationToken()
            response = try await self.post(endpoint, body: body, authorization: authorization.value, logger: logger)
        }
        logger[metadataKey: "http_status"] = "\(response.status)"
        logger[metadataKey: "duration"] = "\(ContinuousClock.now - started)"
        do {
            let body = try Self.check(response.status, body: response.body, deviceToken: deviceToken)
            logger.debug("DeviceCheck call succeeded")
            return body
        } catch let error as DeviceCheckError {
            logger.log(level: error.logLevel, "DeviceCheck call failed", metadata: ["error": "\(error)"])
            throw error
        }
    }

    private func authorizationToken() async throws -> AuthorizationTokenCache.Token {
        do {
            return try await self.tokens.token()
        } catch {
            throw DeviceCheckError(.unauthorized, detail: "could not sign the authorization token: \(error)")
        }
    }

    private func post(_ endpoint: Endpoint, body: Data, authorization: String, logger: Logger) async throws -> RawResponse {
        var request = HTTPClientRequest(url: self.configuration.endpointURL(endpoint.rawValue))
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer " + authorization)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(body)
        let timeout = self.configuration.timeout
        let httpClient = self.httpClient
        do {
            return try await withTimeLimit(timeout) { [request] in
                let response = try await httpClient.execute(request, timeout: .nanoseconds(timeout.nanoseconds), logger: logger)
                let collected = try await response.body.collect(upTo: Self.maximumResponseSize)
                return RawResponse(status: Int(response.status.code), body: Array(collected.readableBytesView))
            }
        } catch let error as DeviceCheckError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Self.transportError(error)
        }
    }

    // MARK: Response

    /// Classifies a response; returns the body of a 2xx.
    static func check(_ status: Int, body: [UInt8], deviceToken: String) throws -> [UInt8] {
        switch status {
        case 200..<300:
            return body
        case 400:
            let message = Self.message(body, hiding: deviceToken)
            if message.lowercased().contains("device token") {
                throw DeviceCheckError(.badDeviceToken, status: status, detail: message)
            }
            throw DeviceCheckError(.badRequest(message), status: status)
        case 401, 403:
            throw DeviceCheckError(.unauthorized, status: status, detail: Self.message(body, hiding: deviceToken))
        case 429:
            throw DeviceCheckError(.rateLimited, status: status)
        case 500..<600:
            throw DeviceCheckError(.unavailable, status: status, detail: Self.message(body, hiding: deviceToken))
        case 402..<500:
            throw DeviceCheckError(.badRequest(Self.message(body, hiding: deviceToken)), status: status)
        default:
            throw DeviceCheckError(.malformedResponse, status: status)
        }
    }

    /// The reply of `query_two_bits`.
    private struct QueryReply: Decodable {
        let bit0: Bool?
        let bit1: Bool?
        let last_update_time: String?
    }

    /// Parses a 200 from `query_two_bits`: bits JSON, or the plain-text "Failed to find bit state" /
    /// "Bit State Not Found" (any body mentioning "bit state") for a device never set.
    static func parseBits(_ body: [UInt8]) throws -> DeviceBits {
        if let reply = try? JSONDecoder().decode(QueryReply.self, from: Data(body)), reply.bit0 != nil || reply.bit1 != nil {
            return DeviceBits(bit0: reply.bit0 ?? false, bit1: reply.bit1 ?? false, lastUpdateTime: reply.last_update_time)
        }
        if String(decoding: body, as: UTF8.self).lowercased().contains("bit state") {
            return .neverSet
        }
        throw DeviceCheckError(.malformedResponse, status: 200, detail: "query_two_bits: neither bits nor 'bit state not found'")
    }

    /// Apple's message, trimmed, at most 200 characters, with the device token (should it be echoed) removed.
    static func message(_ body: [UInt8], hiding deviceToken: String) -> String {
        var text = String(decoding: body.prefix(1024), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if !deviceToken.isEmpty { text = text.replacingOccurrences(of: deviceToken, with: "<device token>") }
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }

    /// Maps an HTTP client error: a bad URL is our configuration, anything else (timeouts, refused or dropped
    /// connections, TLS) is an outage.
    static func transportError(_ error: any Error) -> DeviceCheckError {
        if let error = error as? HTTPClientError,
            [.invalidURL, .emptyHost, .emptyScheme].contains(error) || "\(error)".contains("unsupportedScheme")
        {
            return DeviceCheckError(.badRequest("invalid DeviceCheck base URL"), detail: "\(error)")
        }
        return DeviceCheckError(.unavailable, detail: String("\(error)".prefix(200)))
    }
}

extension DeviceCheckError {
    /// Outages are routine; configuration problems and our bugs deserve attention.
    fileprivate var logLevel: Logger.Level {
        switch self.kind {
        case .badDeviceToken: .debug
        case .rateLimited, .unavailable: .info
        case .badRequest, .unauthorized, .malformedResponse: .warning
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}

/// Runs `operation`, failing with `DeviceCheckError(.unavailable)` if it takes longer than `limit` (the operation is
/// cancelled then). Covers the whole exchange, body included, which the HTTP client's own deadline does not.
private func withTimeLimit<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw DeviceCheckError(.unavailable, detail: "timed out after \(limit)")
        }
        return value
    }
}
