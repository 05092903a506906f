public import Foundation
import GuestPassCrypto
public import GuestPassPostgres

/// An API key: `gp_pub_` (publishable) or `gp_sec_` (secret) followed by 64 lowercase hex digits of OpenSSL randomness.
/// Only its SHA-256 is stored; the value is shown once, when it is created.
public struct APIKey: Sendable {
    /// The two kinds (`guestpass.api_keys.kind`): a publishable key acts as `anon`, a secret key as `service_role`.
    public enum Kind: String, Sendable {
        case publishable
        case secret

        var tag: String { self == .publishable ? "gp_pub_" : "gp_sec_" }
    }

    public let kind: Kind
    public let value: String

    /// A new random key of `kind`.
    public static func generate(kind: Kind) throws -> APIKey {
        APIKey(kind: kind, value: kind.tag + Digest.hex(try SecureRandom.bytes(32)))
    }

    /// The kind of a well-formed key, or nil: anything else cannot be a key, and is refused without a database call.
    public static func kind(of text: String) -> Kind? {
        let bytes = text.utf8
        guard bytes.count == 7 + 64 else { return nil }
        let kind: Kind
        if text.hasPrefix(Kind.publishable.tag) { kind = .publishable } else if text.hasPrefix(Kind.secret.tag) { kind = .secret } else { return nil }
        let isHex = bytes.dropFirst(7).allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
        }
        return isHex ? kind : nil
    }

    /// The stored form: lowercase hex SHA-256 of the key.
    public var hash: String { Digest.sha256Hex(self.value) }
    /// The first characters, stored for display.
    public var prefix: String { String(self.value.prefix(12)) }

    /// Records the key for `appID` (hashed) on `connection`, inside the caller's transaction.
    public func record(for appID: UUID, on connection: PostgresConnection) throws {
        try connection.execute(
            "INSERT INTO guestpass.api_keys (app_id, kind, key_hash, key_prefix) VALUES ($1, $2, $3, $4)",
            [appID, self.kind.rawValue, self.hash, self.prefix]
        )
    }
}

/// What an API key grants: its app, and the role it stands for.
public struct APIKeyGrant: Sendable, Equatable {
    public let appID: UUID
    /// `anon` for a publishable key, `service_role` for a secret key.
    public let role: DatabaseRole
    /// The claims of a request made with this key and no token (`{"app_id":…,"role":…}`), encoded once per grant
    /// instead of once per request.
    public let claimsJSON: String
    /// The same claims with role `anon`, for the server-side steps run as `anon` (sign-up, refresh).
    public let anonClaimsJSON: String

    public init(appID: UUID, role: DatabaseRole) {
        self.appID = appID
        self.role = role
        self.claimsJSON = RequestIdentity.keyClaimsJSON(role, app: appID)
        self.anonClaimsJSON = role == .anon ? self.claimsJSON : RequestIdentity.keyClaimsJSON(.anon, app: appID)
    }
}

extension RequestIdentity {
    /// The claims of a request made with an API key and no token: the role, and the app when known.
    private struct KeyClaims: Encodable {
        let role: String
        let app_id: String?
    }

    /// The identity of a request made with an API key only (`{"role": …, "app_id": …}`); `app` nil before the key's app
    /// is known (the key lookup itself).
    public static func apiKey(_ role: DatabaseRole, app: UUID?, clientAddress: String = "") -> RequestIdentity {
        RequestIdentity(role: role, claimsJSON: self.keyClaimsJSON(role, app: app), clientAddress: clientAddress)
    }

    /// The claims JSON of `apiKey(_:app:)`; `APIKeyGrant` keeps its own so a request does not encode it again.
    public static func keyClaimsJSON(_ role: DatabaseRole, app: UUID?) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let claims = KeyClaims(role: role.rawValue, app_id: app?.uuidString.lowercased())
        return (try? encoder.encode(claims)).map { String(decoding: $0, as: UTF8.self) } ?? #"{"role":"anon"}"#
    }
}
