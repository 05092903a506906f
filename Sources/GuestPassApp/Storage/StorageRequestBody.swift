import GuestPassJSON
import Hummingbird
import StorageProtocol

/// The JSON bodies of storage's routes, read leniently where the SDKs differ (a number or a numeric string, an explicit
/// null) and strictly where a wrong type would change the meaning.
struct StorageBody {
    let object: [String: JSONValue]

    /// The largest JSON body a storage route takes (1,000 paths of 1 KiB fit).
    static let limit = 2 * 1024 * 1024

    static func read(_ request: inout Request) async throws -> StorageBody {
        do {
            return StorageBody(object: try await request.jsonObject(limit: Self.limit))
        } catch let error as APIError {
            throw StorageFailure.invalidRequest(error.message)
        }
    }

    /// A string member; nil when absent or null.
    func string(_ name: String) throws -> String? {
        switch self.object[name] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw StorageFailure.invalidRequest("body/\(name) must be string")
        }
    }

    func requiredString(_ name: String) throws -> String {
        guard let value = try self.string(name) else { throw StorageFailure.invalidRequest("body must have required property '\(name)'") }
        return value
    }

    /// An integer member, given as a JSON number or a numeric string (supabase-py sends `expiresIn` as text).
    func integer(_ name: String) throws -> Int? {
        switch self.object[name] {
        case nil, .null?: return nil
        case .number(let number)?:
            guard let value = Int(number.text) else { throw StorageFailure.invalidRequest("body/\(name) must be integer") }
            return value
        case .string(let text)?:
            guard let value = Int(text) else { throw StorageFailure.invalidRequest("body/\(name) must be integer") }
            return value
        default: throw StorageFailure.invalidRequest("body/\(name) must be integer")
        }
    }

    func bool(_ name: String) throws -> Bool? {
        switch self.object[name] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        case .string("true")?: return true
        case .string("false")?: return false
        default: throw StorageFailure.invalidRequest("body/\(name) must be boolean")
        }
    }

    /// An array of strings; nil when absent.
    func strings(_ name: String) throws -> [String]? {
        switch self.object[name] {
        case nil, .null?: return nil
        case .array(let values)?:
            return try values.map {
                guard case .string(let value) = $0 else { throw StorageFailure.invalidRequest("body/\(name) must be an array of strings") }
                return value
            }
        default: throw StorageFailure.invalidRequest("body/\(name) must be array")
        }
    }

    func member(_ name: String) -> StorageBody? {
        guard case .object(let inner)? = self.object[name] else { return nil }
        return StorageBody(object: inner)
    }
}
