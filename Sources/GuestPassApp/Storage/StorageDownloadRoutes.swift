import Foundation
import GuestPassJSON
import GuestPassObjectStore
import GuestPassPostgres
import GuestPassStore
import HTTPTypes
import Hummingbird
import NIOCore
import StorageProtocol

/// Downloads and info: `GET`/`HEAD /object/{bucket}/{key}` (also `/object/authenticated/…`) under the caller's
/// policies; `/object/public/…` for public buckets with no key; `/object/sign/…?token=` for signed URLs;
/// `GET /object/info/…`. Bytes stream from the backend to the socket; `Range` (one range, 206), `If-None-Match`
/// (304), and `download=` (`Content-Disposition`) as the real server answers them.
struct StorageDownloadRoutes: Sendable {
    let services: StorageServices

    /// A visible object: its row's facts.
    struct Found {
        let app: UUID
        let id: UUID
        let version: String
        let size: Int64
        let mimeType: String
        let cacheControl: String
        let eTag: String
        let userMetadataText: String?
        let createdAt: String
        let updatedAt: String
        let updatedEpoch: Int64
        let bucket: String
        let name: String
    }

    /// `GET /object/info/{bucket}/{key}` (`skipping` 2) or `/object/info/authenticated/…` (3).
    func info(_ request: Request, caller: Caller, skipping: Int) async throws -> Response {
        try await self.info(try await self.find(try StoragePath.object(request, skipping: skipping), caller: caller))
    }

    /// `GET`/`HEAD /object/{bucket}/{key}` (`skipping` 1) or `/object/authenticated/…` (2).
    func download(_ request: Request, caller: Caller, skipping: Int) async throws -> Response {
        try await self.serve(request, try await self.find(try StoragePath.object(request, skipping: skipping), caller: caller))
    }

    /// `GET`/`HEAD /object/public/{bucket}/{key}`.
    func downloadPublic(_ request: Request) async throws -> Response {
        try await self.serve(request, try await self.findPublic(try StoragePath.object(request, skipping: 2)))
    }

    /// `GET /object/info/public/{bucket}/{key}`.
    func infoPublic(_ request: Request) async throws -> Response {
        try await self.info(try await self.findPublic(try StoragePath.object(request, skipping: 3)))
    }

    /// `GET /object/sign/{bucket}/{key}?token=`: `Expires` instead of `Cache-Control`, as the real server answers.
    func downloadSigned(_ request: Request) async throws -> Response {
        let path = try StoragePath.object(request, skipping: 2)
        let claims = try self.services.signer.verify(request.uri.queryParameters.get("token"), scope: .download, url: "\(path.bucket)/\(path.key)")
        let found = try await self.find(path, identity: self.services.serviceIdentity(app: claims.app), app: claims.app)
        var response = try await self.serve(request, found)
        response.headers[.cacheControl] = nil
        response.headers[.expires] = HTTPDate.format(Date(timeIntervalSince1970: TimeInterval(claims.exp)))
        return response
    }

    /// The object as the caller sees it: under its policies, or for a public bucket whatever they say (as Supabase).
    private func find(_ path: StoragePath, caller: Caller) async throws -> Found {
        try await self.find(path, identity: caller.identity, app: caller.appID, publicFallback: true)
    }

    /// A public bucket's object, found by the bucket's name alone (public names are unique across apps).
    private func findPublic(_ path: StoragePath) async throws -> Found {
        let results = try await self.services.pool.withConnection { connection in
            try await connection.run { try $0.execute(StorageStatements.publicBucketApp(path.bucket)) }
        }
        guard let app = try results.first?.decode(UUID?.self, "app_id") else { throw StorageFailure.noSuchBucket }
        return try await self.find(path, identity: self.services.serviceIdentity(app: app), app: app)
    }

    private func find(_ path: StoragePath, identity: RequestIdentity, app: UUID, publicFallback: Bool = false) async throws -> Found {
        let results = try await self.services.pool.requestTransaction(
            identity, readOnly: true, [StorageStatements.object(bucket: path.bucket, name: path.key)])
        guard let row = results.first?.first else { throw StorageFailure.noSuchBucket }
        guard let id = try row.decode(UUID?.self, "id") else {
            if publicFallback, try row.decode(Bool.self, "public"), identity.role != .serviceRole {
                return try await self.find(path, identity: self.services.serviceIdentity(app: app), app: app)
            }
            throw StorageFailure.noSuchKey
        }
        let version = try row.decode(String.self, "version")
        return Found(
            app: app, id: id, version: version, size: try row.decode(Int64?.self, "size") ?? 0,
            mimeType: try row.decode(String?.self, "mimetype") ?? "application/octet-stream",
            cacheControl: try row.decode(String?.self, "cache_control") ?? "no-cache",
            eTag: try row.decode(String?.self, "etag") ?? StorageServices.eTag(version: version),
            userMetadataText: try row.decode(String?.self, "user_metadata"), createdAt: try row.decode(String.self, "created_at"),
            updatedAt: try row.decode(String.self, "updated_at"), updatedEpoch: try row.decode(Int64.self, "updated_epoch"),
            bucket: path.bucket, name: path.key)
    }

    /// `GET /object/info/…`: Supabase's info body (`metadata` is the user's).
    private func info(_ found: Found) async throws -> Response {
        let userMetadata = found.userMetadataText.flatMap { try? JSONValue.parse($0) } ?? .object([:])
        return try StorageServices.json(
            ObjectInfo(
                id: found.id.lowercasedString, name: found.name, version: found.version, bucket_id: found.bucket, size: found.size,
                content_type: found.mimeType, cache_control: found.cacheControl, etag: found.eTag, metadata: userMetadata,
                last_modified: found.updatedAt, created_at: found.createdAt))
    }

    /// The bytes (or, for HEAD, the headers) of `found`.
    private func serve(_ request: Request, _ found: Found) async throws -> Response {
        var headers: HTTPFields = [
            .contentType: found.mimeType.lowercased().hasPrefix("text/html") ? "text/plain" : found.mimeType,
            .eTag: found.eTag, .lastModified: HTTPDate.format(Date(timeIntervalSince1970: TimeInterval(found.updatedEpoch))),
            .cacheControl: found.cacheControl, .acceptRanges: "bytes",
            .xRobotsTag: "none",
        ]
        if let download = request.uri.queryParameters.get("download") {
            let name = download.isEmpty ? "" : StorageURL.encode(download)
            headers[.contentDisposition] = name.isEmpty ? "attachment;" : "attachment; filename=\(name); filename*=UTF-8''\(name)"
        }
        if let tags = request.headers[.ifNoneMatch],
            tags.split(separator: ",").contains(where: {
                let tag = $0.trimmingCharacters(in: .whitespaces)
                return tag == "*" || tag == found.eTag || tag == "W/" + found.eTag
            })
        {
            return Response(status: .notModified, headers: headers)
        }
        let size = found.size
        var range: ClosedRange<Int64>?
        switch ByteRange.resolve(request.headers[.range], size: size) {
        case .whole: range = nil
        case .partial(let bounds): range = bounds
        case .unsatisfiable:
            var answer = StorageFailure.make(416, .invalidRange, error: "Range Not Satisfiable", "The requested range is not satisfiable")
            answer.headers[.contentRange] = "bytes */\(size)"
            throw answer
        }
        if let range { headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)" }
        let length = range.map { $0.upperBound - $0.lowerBound + 1 } ?? size
        headers[.contentLength] = String(length)
        let status: HTTPResponse.Status = range == nil ? .ok : .partialContent
        if request.method == .head { return Response(status: status, headers: headers) }
        let download: ObjectDownload
        do {
            download = try await self.services.backend.get(StorageServices.backendKey(app: found.app, version: found.version), range: range)
        } catch ObjectBackendError.notFound {
            var answer = StorageFailure.bytesMissing
            answer.headers[.cacheControl] = "no-store"
            throw answer
        }
        let backend = self.services.backend.kind
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: Int(length)) { writer in
                var sent: Int64 = 0
                try await download.stream { chunk in
                    sent += Int64(chunk.readableBytes)
                    try await writer.write(chunk)
                }
                ServiceMetrics.storageBytes("out", sent, backend: backend)
                try await writer.finish(nil)
            })
    }
}

/// Supabase's info body: `id`, `version` and `name` always strings (supabase-swift's `FileObjectV2` needs them).
struct ObjectInfo: Encodable {
    let id: String
    let name: String
    let version: String
    let bucket_id: String
    let size: Int64
    let content_type: String
    let cache_control: String
    let etag: String
    let metadata: JSONValue
    let last_modified: String
    let created_at: String
}

extension HTTPField.Name {
    static let xRobotsTag = Self("X-Robots-Tag")!
}

/// `Expires` and friends: an IMF-fixdate (RFC 9110 §5.6.7).
enum HTTPDate {
    static func format(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return String(
            format: "%@, %02d %@ %04d %02d:%02d:%02d GMT", days[Int(parts.tm_wday)], Int(parts.tm_mday), months[Int(parts.tm_mon)],
            Int(parts.tm_year) + 1900, Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}
