import Foundation
import GuestPassCrypto
import GuestPassJSON
import GuestPassStore

/// The `data` of an anonymous sign-up, validated: the device secret (hashed at once), device facts, metadata.
struct GuestSignup {
    /// Lowercase hex SHA-256 of the lowercase canonical device secret, or nil without `data.device_id`.
    let deviceSecretHash: String?
    /// `data.device`: model, os_version, app_version, build_number, is_simulator.
    let device: [String: JSONValue]?
    /// Everything else in `data`, stored as `user_metadata` (never the device secret or device facts).
    let userMetadata: [String: JSONValue]
    /// `data.transfer_code` or `data.recovery_code`: join that account as a new device instead of signing up a guest.
    let accountCode: AccountCodeRedemption?

    struct AccountCodeRedemption {
        let kind: AccountCode.Kind
        let code: String
    }

    init(data: JSONValue?) throws {
        var metadata: [String: JSONValue]
        switch data {
        case .none, .some(.null): metadata = [:]
        case .some(.object(let members)): metadata = members
        default: throw APIError.validation("data must be a JSON object")
        }
        if let secret = metadata.removeValue(forKey: "device_id") {
            guard let text = secret.stringValue, let uuid = UUID(uuidString: text), Self.isRandomUUID(uuid) else {
                throw APIError.validation("data.device_id must be a random (version 4) UUID")
            }
            self.deviceSecretHash = Digest.sha256Hex(uuid.uuidString.lowercased())
        } else {
            self.deviceSecretHash = nil
        }
        if let device = metadata.removeValue(forKey: "device") {
            guard case .object(let facts) = device else { throw APIError.validation("data.device must be a JSON object") }
            for (key, value) in facts {
                switch (key, value) {
                case ("model", .string(let text)), ("os_version", .string(let text)), ("app_version", .string(let text)),
                    ("build_number", .string(let text)):
                    guard text.count <= 255 else { throw APIError.validation("data.device.\(key) is longer than 255 characters") }
                case ("is_simulator", .bool), (_, .null):
                    break
                case ("model", _), ("os_version", _), ("app_version", _), ("build_number", _):
                    throw APIError.validation("data.device.\(key) must be a string")
                case ("is_simulator", _):
                    throw APIError.validation("data.device.is_simulator must be a boolean")
                default:
                    throw APIError.validation("data.device.\(key) is not a known device fact")
                }
            }
            self.device = facts
        } else {
            self.device = nil
        }
        let transfer = metadata.removeValue(forKey: "transfer_code")
        let recovery = metadata.removeValue(forKey: "recovery_code")
        switch (transfer, recovery) {
        case (nil, nil): self.accountCode = nil
        case (.string(let code)?, nil): self.accountCode = AccountCodeRedemption(kind: .transfer, code: code)
        case (nil, .string(let code)?): self.accountCode = AccountCodeRedemption(kind: .recovery, code: code)
        default: throw APIError.validation("send one of data.transfer_code and data.recovery_code, as a string")
        }
        guard JSONValue.object(metadata).jsonText.utf8.count <= 16 * 1024 else {
            throw APIError.validation("data is larger than 16 KiB")
        }
        self.userMetadata = metadata
    }

    /// Version 4, RFC 4122 variant: what a random UUID (the iOS `UUID()`) looks like.
    static func isRandomUUID(_ uuid: UUID) -> Bool {
        let bytes = uuid.uuid
        return bytes.6 >> 4 == 4 && bytes.8 >> 6 == 0b10
    }
}
