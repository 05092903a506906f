import Foundation
import GuestPassCrypto
import GuestPassDeviceCheck
import GuestPassDeviceCheckStandIn
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// A running stand-in (real HTTP on a free port) and the means to point clients at it.
struct StandInHarness: Sendable {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"

    let privateKey: ES256PrivateKey
    let state: StandInState
    let port: Int
    /// Raw HTTP access to the stand-in, for requests the production client would never send.
    let http: any TestClientProtocol

    var baseURL: URL { URL(string: "http://127.0.0.1:\(self.port)")! }

    /// A production `DeviceCheckClient` pointed at the stand-in (by default with the accepted key and team).
    func client(
        privateKey: ES256PrivateKey? = nil,
        teamID: String = Self.teamID,
        keyID: String = Self.keyID,
        timeout: Duration = .seconds(5)
    ) -> DeviceCheckClient {
        var logger = Logger(label: "devicecheck-test")
        logger.logLevel = .critical
        let configuration = DeviceCheckConfiguration(
            teamID: teamID,
            keyID: keyID,
            privateKey: privateKey ?? self.privateKey,
            baseURL: self.baseURL,
            timeout: timeout
        )
        return DeviceCheckClient(configuration: configuration, logger: logger)
    }

    /// A valid authorization header for raw requests.
    func authorization(issuedAt: Date = Date()) throws -> String {
        struct Claims: Encodable {
            let iss: String
            let iat: Int
        }
        let signer = JWTSigner(key: self.privateKey, keyID: Self.keyID)
        return "Bearer " + (try signer.sign(Claims(iss: Self.teamID, iat: Int(issuedAt.timeIntervalSince1970))))
    }

    /// POSTs a raw JSON body to a stand-in endpoint; returns status and body text.
    func post(_ path: String, json: String, authorization: String? = nil) async throws -> (status: Int, body: String) {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let authorization { headers[.authorization] = authorization }
        let response = try await self.http.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: json))
        return (response.status.code, String(decoding: response.body.readableBytesView, as: UTF8.self))
    }

    static var nowMilliseconds: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}

/// Starts a stand-in on a free port for the duration of `body`.
func withStandIn<R: Sendable>(_ body: @Sendable (StandInHarness) async throws -> R) async throws -> R {
    let privateKey = try ES256PrivateKey.generate()
    let state = StandInState()
    var logger = Logger(label: "devicecheck-standin-test")
    logger.logLevel = .warning
    let configuration = StandInConfiguration(
        teamID: StandInHarness.teamID,
        keyID: StandInHarness.keyID,
        publicKey: privateKey.publicKey
    )
    let app = buildDeviceCheckStandIn(configuration: configuration, state: state, logger: logger)
    return try await app.test(.live) { http in
        let port = try #require(http.port)
        return try await body(StandInHarness(privateKey: privateKey, state: state, port: port, http: http))
    }
}

/// The `DeviceCheckError` kind `operation` throws.
func errorKind(_ operation: () async throws -> Void) async -> DeviceCheckError.Kind? {
    do {
        try await operation()
        return nil
    } catch let error as DeviceCheckError {
        return error.kind
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

/// `YYYY-MM` of now in UTC.
var currentMonth: String {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    let parts = calendar.dateComponents([.year, .month], from: Date())
    return String(format: "%04d-%02d", parts.year!, parts.month!)
}
