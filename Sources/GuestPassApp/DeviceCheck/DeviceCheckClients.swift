import Foundation
import GuestPassCrypto
import GuestPassDeviceCheck
import GuestPassStore
import Logging
import NIOConcurrencyHelpers

/// An app's DeviceCheck settings, as `guestpass_server.app_devicecheck_settings()` returns them (`DeviceCheckKeySettings`),
/// with the server to call resolved.
struct DeviceCheckSettings: Hashable, Sendable {
    let teamID: String
    let keyID: String
    let keyPath: String
    let baseURL: URL

    /// The settings the store read, with the server resolved; nil when neither `baseURL` nor the environment names one.
    init?(_ stored: DeviceCheckKeySettings) {
        let base = stored.baseURL.flatMap(URL.init(string:)) ?? DeviceCheckConfiguration.environmentBaseURL(stored.environment)
        guard let base else { return nil }
        self.teamID = stored.teamID
        self.keyID = stored.keyID
        self.keyPath = stored.keyPath
        self.baseURL = base
    }
}

/// One `DeviceCheckClient` per distinct app configuration, created on first use (the `.p8` key is read then).
final class DeviceCheckClients: Sendable {
    private let clients = NIOLockedValueBox([DeviceCheckSettings: DeviceCheckClient]())
    private let logger: Logger
    private let timeout: Duration

    init(logger: Logger, timeout: Duration = .seconds(5)) {
        self.logger = logger
        self.timeout = timeout
    }

    func client(for settings: DeviceCheckSettings) throws -> DeviceCheckClient {
        if let client = self.clients.withLockedValue({ $0[settings] }) { return client }
        let pem: String
        do {
            pem = try String(contentsOfFile: settings.keyPath, encoding: .utf8)
        } catch {
            throw DeviceCheckError(.unauthorized, detail: "cannot read the DeviceCheck key file")
        }
        let key = try ES256PrivateKey(pemRepresentation: pem)
        let client = DeviceCheckClient(
            configuration: DeviceCheckConfiguration(
                teamID: settings.teamID, keyID: settings.keyID, privateKey: key, baseURL: settings.baseURL, timeout: self.timeout
            ),
            logger: self.logger
        )
        self.clients.withLockedValue { $0[settings] = client }
        return client
    }
}
