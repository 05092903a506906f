import Foundation
import GuestPassJSON
import GuestPassPostgres
import GuestPassStore
import HTTPTypes
import Hummingbird
import NIOCore
import StorageProtocol

/// Buckets: `GET /bucket`, `GET /bucket/{id}`, `POST /bucket`, `PUT /bucket/{id}`, `POST /bucket/{id}/empty`,
/// `DELETE /bucket/{id}`, under the caller's policies on `storage.buckets` (the secret key may do all of it inside its
/// app; users need policies an app writes, as on Supabase). A public bucket's name is unique across apps (its objects'
/// public URLs name no app); taking one another app has answers 409.
struct StorageBucketRoutes: Sendable {
    let services: StorageServices

    func register(on router: Router<AppRequestContext>, authenticator: Authenticator) {
        let group = router.group("storage/v1").add(middleware: ErrorMiddleware(dialect: .storage))
            .add(middleware: AuthenticationMiddleware(authenticator: authenticator)).group(context: CallerContext.self)
        group.get("bucket") { request, context in
            let query = try BucketListQuery(request)
            let results = try await self.services.pool.requestTransaction(
                context.caller.identity, readOnly: true,
                [
                    StorageStatements.listBuckets(
                        limit: query.limit, offset: query.offset, search: query.search, sortColumn: query.sortColumn,
                        ascending: query.ascending)
                ])
            return StorageServices.json(try results.first?.first?.decode(String.self, "body") ?? "[]")
        }
        group.get("bucket/:id") { request, context in
            let id = try StoragePath.bucket(request, skipping: 1)
            let results = try await self.services.pool.requestTransaction(context.caller.identity, readOnly: true, [StorageStatements.bucket(id)])
            guard let body = try results.first?.first?.decode(String.self, "body") else { throw StorageFailure.noSuchBucket }
            return StorageServices.json(body)
        }
        group.post("bucket") { request, context in try await self.create(request, context) }
        group.put("bucket/:id") { request, context in try await self.update(request, context) }
        group.post("bucket/:id/empty") { request, context in
            let segments = request.uri.path.split(separator: "/")
            guard segments.count == 5, let id = segments[3].removingPercentEncoding else { throw StorageFailure.noSuchBucket }
            let bucket = try ObjectName.bucket(id)
            let results = try await self.services.run(
                context.caller.identity, [StorageStatements.bucketExists(bucket), StorageStatements.emptyBucket(bucket)])
            guard results[0].first != nil else { throw StorageFailure.noSuchBucket }
            return try StorageServices.json(StorageMessage(message: "Successfully emptied"))
        }
        group.delete("bucket/:id") { request, context in
            let id = try StoragePath.bucket(request, skipping: 1)
            do {
                let results = try await self.services.run(context.caller.identity, [StorageStatements.deleteBucket(id)])
                guard results.first?.affectedRows == 1 else { throw StorageFailure.noSuchBucket }
            } catch let error as PostgresError where error.sqlState == .foreignKeyViolation {
                throw StorageFailure.bucketNotEmpty
            }
            return try StorageServices.json(StorageMessage(message: "Successfully deleted"))
        }
    }

    private func create(_ request: Request, _ context: CallerContext) async throws -> Response {
        var request = request
        let body = try await StorageBody.read(&request)
        guard let given = try body.string("id") ?? body.string("name") else {
            throw StorageFailure.invalidRequest("body must have required property 'name'")
        }
        let id = try ObjectName.bucket(given)
        let statement = StorageStatements.createBucket(
            id, isPublic: try body.bool("public") ?? false, fileSizeLimit: try Self.sizeLimit(body) ?? nil,
            allowedMimeTypes: try Self.mimeTypes(body) ?? nil)
        do {
            _ = try await self.services.run(context.caller.identity, [statement])
        } catch let error as PostgresError where error.sqlState == .uniqueViolation {
            throw StorageFailure.bucketExists
        }
        return try StorageServices.json(BucketCreated(name: id))
    }

    private func update(_ request: Request, _ context: CallerContext) async throws -> Response {
        var request = request
        let id = try StoragePath.bucket(request, skipping: 1)
        let body = try await StorageBody.read(&request)
        let statement = StorageStatements.updateBucket(
            id, isPublic: try body.bool("public"), fileSizeLimit: try Self.sizeLimit(body), allowedMimeTypes: try Self.mimeTypes(body))
        do {
            let results = try await self.services.run(context.caller.identity, [statement])
            guard results.first?.affectedRows == 1 else { throw StorageFailure.noSuchBucket }
        } catch let error as PostgresError where error.sqlState == .uniqueViolation {
            throw StorageFailure.bucketExists
        }
        return try StorageServices.json(StorageMessage(message: "Successfully updated"))
    }

    /// `file_size_limit`: absent (nil), null (`.some(nil)`: no limit), bytes as a number, or text such as `"1kb"`.
    private static func sizeLimit(_ body: StorageBody) throws -> Int64?? {
        guard let value = body.object["file_size_limit"] else { return nil }
        let bytes: Int64?
        switch value {
        case .null: return .some(nil)
        case .number(let number): bytes = Int64(number.text)
        case .string(let text): bytes = SizeText.bytes(text)
        default: bytes = nil
        }
        guard let bytes, bytes >= 0 else { throw StorageFailure.invalidRequest("file_size_limit must be a size in bytes or text such as 10MB") }
        // 0 is how the SDKs say "no limit" in some versions.
        return .some(bytes == 0 ? nil : bytes)
    }

    /// `allowed_mime_types`: absent (nil), null (any type), or `type/subtype` and `type/*` entries.
    private static func mimeTypes(_ body: StorageBody) throws -> [String]?? {
        guard body.object["allowed_mime_types"] != nil else { return nil }
        guard let types = try body.strings("allowed_mime_types") else { return .some(nil) }
        guard types.count <= 100,
            types.allSatisfy({ type in
                let parts = type.split(separator: "/", omittingEmptySubsequences: false)
                return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty && type.utf8.count <= 255
                    && type.utf8.allSatisfy { $0 > 32 && $0 < 127 }
            })
        else { throw StorageFailure.invalidRequest("allowed_mime_types must be at most 100 entries of type/subtype") }
        return .some(types.isEmpty ? nil : types)
    }
}

struct BucketCreated: Encodable {
    let name: String
}

/// `GET /bucket`'s query, checked as the real server's schema does: `limit` an integer >= 1, `offset` an integer >= 0,
/// `sortColumn` one of `id`, `name`, `created_at`, `updated_at`, `sortOrder` `asc` or `desc`; anything else is 400
/// `InvalidRequest` (it was ignored, so a typo listed every bucket in another order than asked).
struct BucketListQuery {
    static let sortColumns = ["id", "name", "created_at", "updated_at"]

    let limit: Int?
    let offset: Int
    let search: String?
    let sortColumn: String
    let ascending: Bool

    init(_ request: Request) throws {
        let parameters = request.uri.queryParameters
        self.limit = try Self.integer(parameters.get("limit"), "limit", minimum: 1)
        self.offset = try Self.integer(parameters.get("offset"), "offset", minimum: 0) ?? 0
        self.search = parameters.get("search")
        self.sortColumn = parameters.get("sortColumn") ?? "name"
        guard Self.sortColumns.contains(self.sortColumn) else {
            throw StorageFailure.invalidRequest("querystring/sortColumn must be one of \(Self.sortColumns.joined(separator: ", "))")
        }
        let order = parameters.get("sortOrder") ?? "asc"
        guard order == "asc" || order == "desc" else { throw StorageFailure.invalidRequest("querystring/sortOrder must be asc or desc") }
        self.ascending = order == "asc"
    }

    private static func integer(_ text: String?, _ name: String, minimum: Int) throws -> Int? {
        guard let text else { return nil }
        guard let value = Int(text), value >= minimum else {
            throw StorageFailure.invalidRequest("querystring/\(name) must be an integer >= \(minimum)")
        }
        return value
    }
}
