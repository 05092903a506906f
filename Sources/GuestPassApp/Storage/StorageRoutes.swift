import Foundation
import GuestPassCrypto
import GuestPassObjectStore
import GuestPassPostgres
import GuestPassStore
import HTTPTypes
import Hummingbird
import NIOCore
import StorageProtocol

/// What the storage routes share: the pool, the bytes' backend, the URL signer and the settings.
struct StorageServices: Sendable {
    let pool: PostgresPool
    let backend: any ObjectBackend
    let signer: StorageSigner
    /// How long an upload's reservation lasts before the sweep may take its bytes (`GUESTPASS_STORAGE_UPLOAD_GRACE`).
    let uploadGraceSeconds: Int
    /// How long a signed upload URL stays valid (Supabase's `UPLOAD_SIGNED_URL_EXPIRATION_TIME`; hosted uses 2 h).
    let signedUploadSeconds: Int

    /// The backend key of an object's version.
    static func backendKey(app: UUID, version: String) -> String { "\(app.lowercasedString)/\(version)" }
}

/// Supabase Storage's API at `/storage/v1`, for storage3 (supabase-py) and supabase-swift's `storage` unchanged:
/// buckets (`StorageBucketRoutes`), uploads (`StorageUploadRoutes`), downloads and info (`StorageDownloadRoutes`),
/// list, remove, move, copy and signatures (`StorageObjectRoutes`). Errors in storage's shape (`StorageFailure`).
/// Image transformations (`/render/image`) and resumable uploads (`/upload/resumable`, TUS) are not served: 501
/// `NotImplemented` says so.
struct StorageRoutes: Sendable {
    let services: StorageServices
    let authenticator: Authenticator

    func register(on router: Router<AppRequestContext>) {
        let root = router.group("storage/v1").add(middleware: ErrorMiddleware(dialect: .storage))
        for path in ["render/image/**", "upload/resumable", "upload/resumable/**"] {
            for method in [HTTPRequest.Method.get, .head, .post, .put, .patch, .delete, .options] {
                root.on(RouterPath(path), method: method) { request, _ -> Response in
                    throw StorageFailure.notServed(request.uri.path.contains("render/") ? "Image transformation" : "Resumable (TUS) upload")
                }
            }
        }
        // `/object/…` mixes fixed words with a bucket and a key of any depth, and public and signed access need no API
        // key: one handler per method reads the path (`dispatch`) rather than a route tree that cannot hold both.
        for method in [HTTPRequest.Method.get, .head, .post, .put, .delete] {
            root.on("object/**", method: method) { request, context in try await self.dispatch(request, context) }
        }
        StorageBucketRoutes(services: self.services).register(on: router, authenticator: self.authenticator)
    }

    /// The `/object/…` routes, by method and the path's first words (the real server's route table).
    private func dispatch(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        let words = request.uri.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(4).map(String.init)
        let first = words.first ?? ""
        let second = words.count > 1 ? words[1] : ""
        let downloads = StorageDownloadRoutes(services: self.services)
        let uploads = StorageUploadRoutes(services: self.services)
        let objects = StorageObjectRoutes(services: self.services)
        func caller() async throws -> Caller { try await self.authenticator.authenticate(request, context) }
        switch request.method {
        case .get, .head:
            switch first {
            case "public": return try await downloads.downloadPublic(request)
            case "sign" where request.method == .get: return try await downloads.downloadSigned(request)
            case "info" where request.method == .get:
                switch second {
                case "public": return try await downloads.infoPublic(request)
                case "authenticated": return try await downloads.info(request, caller: try await caller(), skipping: 3)
                default: return try await downloads.info(request, caller: try await caller(), skipping: 2)
                }
            case "authenticated": return try await downloads.download(request, caller: try await caller(), skipping: 2)
            default: return try await downloads.download(request, caller: try await caller(), skipping: 1)
            }
        case .post:
            switch first {
            case "list" where words.count == 2: return try await objects.list(request, caller: try await caller())
            case "move" where words.count == 1: return try await objects.move(request, caller: try await caller())
            case "copy" where words.count == 1: return try await objects.copy(request, caller: try await caller())
            case "sign" where words.count == 2: return try await objects.signMany(request, caller: try await caller())
            case "sign" where words.count > 2: return try await objects.signOne(request, caller: try await caller())
            case "upload" where second == "sign": return try await uploads.createSignedUpload(request, caller: try await caller())
            default: return try await uploads.upload(request, caller: try await caller(), channel: context.channel)
            }
        case .put:
            if first == "upload", second == "sign" { return try await uploads.uploadSigned(request, channel: context.channel) }
            return try await uploads.upload(request, caller: try await caller(), channel: context.channel)
        case .delete:
            if words.count == 1 { return try await objects.remove(request, caller: try await caller()) }
            return try await objects.removeOne(request, caller: try await caller())
        default:
            throw StorageFailure.make(405, .invalidRequest, error: "Method Not Allowed", "Method \(request.method.rawValue) is not allowed here")
        }
    }

    /// Without a configured backend every storage path answers 503, in storage's shape.
    static func registerUnconfigured(on router: Router<AppRequestContext>) {
        let root = router.group("storage/v1").add(middleware: ErrorMiddleware(dialect: .storage))
        for method in [HTTPRequest.Method.get, .head, .post, .put, .delete] {
            root.on("**", method: method) { _, _ -> Response in
                throw StorageFailure.make(
                    503, .internalError, error: "Service Unavailable",
                    "Storage is not configured on this server: set GUESTPASS_STORAGE_DIR or GUESTPASS_STORAGE_BACKEND=s3")
            }
        }
    }
}

/// A bucket and an object key taken from a request path, checked (`ObjectName`) and percent-decoded.
struct StoragePath {
    let bucket: String
    let key: String

    /// The bucket and key after the path's first `skipping` segments past `/storage/v1/` (`object/public` is 2).
    static func object(_ request: Request, skipping: Int) throws -> StoragePath {
        let segments = try Self.segments(request, skipping: skipping)
        guard segments.count >= 2 else { throw StorageFailure.invalidKey(segments.dropFirst().joined(separator: "/")) }
        return StoragePath(bucket: try ObjectName.bucket(segments[0]), key: try ObjectName.key(segments.dropFirst().joined(separator: "/")))
    }

    /// The bucket alone (`/object/list/{bucket}`, `/bucket/{id}`).
    static func bucket(_ request: Request, skipping: Int) throws -> String {
        let segments = try Self.segments(request, skipping: skipping)
        guard segments.count == 1 else { throw StorageFailure.invalidBucketName(segments.joined(separator: "/")) }
        return try ObjectName.bucket(segments[0])
    }

    private static func segments(_ request: Request, skipping: Int) throws -> [String] {
        let raw = request.uri.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(3 + skipping)
        return try raw.map { segment in
            guard let decoded = segment.removingPercentEncoding else { throw StorageFailure.invalidKey(String(segment)) }
            return decoded
        }
    }
}

extension StorageServices {
    /// The identity of public and signed access: the bucket's app's secret-key role (its tenant policy still applies).
    func serviceIdentity(app: UUID) -> RequestIdentity { .apiKey(.serviceRole, app: app) }

    /// A JSON answer from text SQL built.
    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// A JSON answer from an `Encodable`.
    static func json(_ value: some Encodable) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try CompactJSONEncoder().encode(value))))
    }

    /// An object's ETag: its version (a new one per write), quoted.
    static func eTag(version: String) -> String { "\"\(version.replacingOccurrences(of: "-", with: ""))\"" }

    /// Supabase's system metadata of bytes stored as `version` (`storage.objects.metadata`).
    static func systemMetadata(mimeType: String, cacheControl: String, size: Int64, version: String) throws -> String {
        let metadata = SystemMetadata(
            eTag: Self.eTag(version: version), size: size, mimetype: mimeType, cacheControl: cacheControl, lastModified: RFC3339.format(Date()),
            contentLength: size, httpStatusCode: 200)
        return String(decoding: try CompactJSONEncoder().encode(metadata), as: UTF8.self)
    }

    /// Deletes the bytes of a version that will have no row (a failed upload or copy), then its reservation; best
    /// effort: the sweep reclaims what this misses after the grace period.
    func abandon(_ key: String) async {
        do {
            try await self.backend.delete(key)
            _ = try await self.pool.withConnection { connection in
                try await connection.run { try $0.execute(StorageStatements.abandonUpload(key: key)) }
            }
        } catch {}
    }

    /// Runs `statements` in the request transaction of `identity`; the results of the statements.
    func run(_ identity: RequestIdentity, _ statements: [PostgresStatement]) async throws -> [PostgresResult] {
        try await self.pool.requestTransaction(identity, statements)
    }
}

struct StorageMessage: Encodable {
    let message: String
}
