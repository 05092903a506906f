public import Foundation
import GuestPassCrypto

/// The stand-in's memory: the bits of each device, the planned failures and the recent requests.
///
/// A device is identified by the stable part of its tokens (see `makeDeviceToken(deviceID:)`), so every token of
/// one device, like a reinstall on a real phone, shares its bits.
public actor StandInState {
    /// How many requests `requests` keeps.
    public static let requestHistoryLimit = 200

    private var devices: [String: StandInDevice] = [:]
    private var failures: [StandInFailure] = []
    /// The most recent `/v1` requests, oldest first.
    public private(set) var requests: [StandInRequest] = []

    /// Creates an empty state.
    public init() {}

    // MARK: Device tokens

    /// A new device token for the physical device `deviceID`: standard base64 of `"<deviceID>:<random nonce>"`.
    /// Every call returns a different token; all of them share the device's bits.
    public static func makeDeviceToken(deviceID: String) -> String {
        let nonce = (try? SecureRandom.bytes(18)).map(Base64URL.encode) ?? UUID().uuidString
        return Data((deviceID + ":" + nonce).utf8).base64EncodedString()
    }

    /// The device id of a stand-in token, or nil if it is not one: not standard base64 (line breaks included), not
    /// UTF-8, or without a non-empty device id and nonce around the last `:`.
    public static func deviceID(fromToken token: String) -> String? {
        guard !token.isEmpty, token.utf8.count <= 4096, let data = Data(base64Encoded: token),
            let text = String(data: data, encoding: .utf8), let colon = text.lastIndex(of: ":")
        else { return nil }
        let deviceID = String(text[..<colon])
        let nonce = text[text.index(after: colon)...]
        return deviceID.isEmpty || nonce.isEmpty ? nil : deviceID
    }

    // MARK: Devices

    /// The record of `deviceID`, or nil if its bits were never set.
    public func device(_ deviceID: String) -> StandInDevice? {
        self.devices[deviceID]
    }

    /// Sets the bits of `deviceID` as `update_two_bits` would (a nil bit keeps its value) and counts an update.
    @discardableResult
    public func setBits(deviceID: String, bit0: Bool?, bit1: Bool?, at date: Date = Date()) -> StandInDevice {
        var device = self.devices[deviceID] ?? StandInDevice(bit0: false, bit1: false, lastUpdated: date, updates: 0)
        if let bit0 { device.bit0 = bit0 }
        if let bit1 { device.bit1 = bit1 }
        device.lastUpdated = date
        device.updates += 1
        self.devices[deviceID] = device
        return device
    }

    // MARK: Failures

    /// Plans a failure; plans apply in the order they were added.
    public func injectFailure(_ failure: StandInFailure) {
        self.failures.append(failure)
    }

    /// The failures still planned.
    public var pendingFailures: [StandInFailure] { self.failures }

    /// Forgets every device, planned failure and recorded request.
    public func reset() {
        self.devices = [:]
        self.failures = []
        self.requests = []
    }

    /// Consumes one use of the first failure planned for `endpoint`.
    func takeFailure(for endpoint: String) -> StandInFailure? {
        guard let index = self.failures.firstIndex(where: { $0.applies(to: endpoint) }) else { return nil }
        let failure = self.failures[index]
        self.failures[index].count -= 1
        if self.failures[index].count <= 0 { self.failures.remove(at: index) }
        return failure
    }

    // MARK: Requests

    func record(_ request: StandInRequest) {
        self.requests.append(request)
        if self.requests.count > Self.requestHistoryLimit {
            self.requests.removeFirst(self.requests.count - Self.requestHistoryLimit)
        }
    }
}
