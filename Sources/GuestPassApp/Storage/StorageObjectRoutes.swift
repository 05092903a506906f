import Foundation
import GuestPassObjectStore
import GuestPassPostgres
import GuestPassStore
import HTTPTypes
import Hummingbird
import NIOCore
import StorageProtocol

/// List, remove, move, copy and signed download URLs, each one request transaction under the caller's policies.
struct StorageObjectRoutes: Sendable {
    let services: StorageServices

    func list(_ request: Request, caller: Caller) async throws -> Response {
        var request = request
        let bucket = try StoragePath.bucket(request, skipping: 2)
        let body = try await StorageBody.read(&request)
        let folder = try ObjectName.folder(try body.string("prefix") ?? "")
        let limit = try body.integer("limit") ?? 100
        let offset = try body.integer("offset") ?? 0
        guard (1...1500).contains(limit) else { throw StorageFailure.invalidRequest("body/limit must be >= 1 and <= 1500") }
        guard offset >= 0 else { throw StorageFailure.invalidRequest("body/offset must be >= 0") }
        let sort = body.member("sortBy")
        let column = try sort?.string("column") ?? "name"
        guard ["name", "updated_at", "created_at", "last_accessed_at"].contains(column) else {
            throw StorageFailure.invalidRequest("sortBy/column must be one of name, updated_at, created_at, last_accessed_at")
        }
        let order = (try sort?.string("order") ?? "asc").lowercased()
        guard order == "asc" || order == "desc" else { throw StorageFailure.invalidRequest("sortBy/order must be asc or desc") }
        let search = try body.string("search") ?? ""
        guard search.utf8.count <= ObjectName.maxKeyBytes, !search.utf8.contains(0) else { throw StorageFailure.invalidRequest("search is too long") }
        // The bucket as the object routes see it (its app's, whatever the bucket policies say), then the entries.
        let results = try await self.services.pool.requestTransaction(
            caller.identity, readOnly: true,
            [
                StorageStatements.bucketExists(bucket),
                StorageStatements.list(
                    bucket: bucket, folder: folder, search: search, limit: limit, offset: offset, sortColumn: column, ascending: order == "asc"),
            ])
        guard results[0].first != nil else { throw StorageFailure.noSuchBucket }
        return StorageServices.json(try results[1].first?.decode(String.self, "body") ?? "[]")
    }

    func remove(_ request: Request, caller: Caller) async throws -> Response {
        var request = request
        let bucket = try StoragePath.bucket(request, skipping: 1)
        let body = try await StorageBody.read(&request)
        guard let prefixes = try body.strings("prefixes"), (1...1000).contains(prefixes.count) else {
            throw StorageFailure.invalidRequest("body/prefixes must hold 1 to 1000 names")
        }
        let names = try prefixes.map { try ObjectName.key($0) }
        let results = try await self.services.run(caller.identity, [StorageStatements.remove(bucket: bucket, names: names)])
        let text = try results.first?.first?.decode(String.self, "body") ?? "[]"
        return StorageServices.json(text)
    }

    /// `DELETE /object/{bucket}/{key}` (no SDK sends it; the real server serves it): 200 with a message, or 404.
    func removeOne(_ request: Request, caller: Caller) async throws -> Response {
        let path = try StoragePath.object(request, skipping: 1)
        let results = try await self.services.run(caller.identity, [StorageStatements.remove(bucket: path.bucket, names: [path.key])])
        let text = try results.first?.first?.decode(String.self, "body") ?? "[]"
        guard text != "[]" else { throw StorageFailure.noSuchKey }
        return try StorageServices.json(StorageMessage(message: "Successfully deleted"))
    }

    /// The source and destination of move and copy (`bucketId`, `sourceKey`, `destinationKey`, `destinationBucket`).
    private func endpoints(_ body: StorageBody) throws -> (from: StoragePath, to: StoragePath) {
        let bucket = try ObjectName.bucket(try body.requiredString("bucketId"))
        let destinationBucket = try body.string("destinationBucket").flatMap { $0.isEmpty ? nil : $0 } ?? bucket
        return (
            StoragePath(bucket: bucket, key: try ObjectName.key(try body.requiredString("sourceKey"))),
            StoragePath(bucket: try ObjectName.bucket(destinationBucket), key: try ObjectName.key(try body.requiredString("destinationKey")))
        )
    }

    func move(_ request: Request, caller: Caller) async throws -> Response {
        var request = request
        let (from, to) = try self.endpoints(try await StorageBody.read(&request))
        let results = try await self.services.run(
            caller.identity, [StorageStatements.move(bucket: from.bucket, name: from.key, toBucket: to.bucket, toName: to.key)])
        guard results.first?.first != nil else { throw StorageFailure.noSuchKey }
        return try StorageServices.json(StorageMessage(message: "Successfully moved"))
    }

    /// Copy: the source as the caller sees it, its bytes to a fresh version, then the new row under the caller's
    /// policies (INSERT, or with `x-upsert` an upsert), as an upload is.
    func copy(_ request: Request, caller: Caller) async throws -> Response {
        var request = request
        let (from, to) = try self.endpoints(try await StorageBody.read(&request))
        let upsert = request.headers[.xUpsert] == "true"
        let source = try await self.services.pool.requestTransaction(
            caller.identity, readOnly: true, [StorageStatements.object(bucket: from.bucket, name: from.key)])
        guard let row = source.first?.first else { throw StorageFailure.noSuchBucket }
        guard let version = try row.decode(String?.self, "version") else { throw StorageFailure.noSuchKey }
        let size = try row.decode(Int64?.self, "size") ?? 0
        let newVersion = UUID().lowercasedString
        var write = StorageStatements.ObjectWrite(
            id: UUID(), bucket: to.bucket, name: to.key, owner: nil, device: nil, version: newVersion, store: self.services.backend.store,
            metadataJSON: try StorageServices.systemMetadata(
                mimeType: try row.decode(String?.self, "mimetype") ?? "application/octet-stream",
                cacheControl: try row.decode(String?.self, "cache_control") ?? "no-cache", size: size, version: newVersion),
            userMetadataJSON: try row.decode(String?.self, "user_metadata"), upsert: upsert)
        _ = try await self.services.run(
            caller.identity,
            StorageStatements.beginUpload(write, mimeType: nil, declaredLength: size, graceSeconds: self.services.uploadGraceSeconds))
        let newKey = StorageServices.backendKey(app: caller.appID, version: newVersion)
        do {
            try await self.services.backend.copy(from: StorageServices.backendKey(app: caller.appID, version: version), to: newKey)
            let results = try await self.services.run(caller.identity, [StorageStatements.writeObject(write)])
            if upsert, let id = try results.first?.first?.decode(UUID.self, "id") { write.id = id }
        } catch {
            await self.services.abandon(newKey)
            throw error
        }
        ServiceMetrics.storageObjects("copy")
        return try StorageServices.json(UploadAnswer(Id: write.id.lowercasedString, Key: "\(to.bucket)/\(to.key)"))
    }

    private func expiry(_ body: StorageBody) throws -> Int {
        guard let seconds = try body.integer("expiresIn"), seconds >= 1, seconds <= 10 * 365 * 86400 else {
            throw StorageFailure.invalidRequest("body/expiresIn must be an integer >= 1")
        }
        return Int(Date().timeIntervalSince1970) + seconds
    }

    private func signedURL(_ bucket: String, _ key: String, app: UUID, expires: Int) throws -> String {
        let token = try self.services.signer.token(.init(url: "\(bucket)/\(key)", scope: .download, app: app, exp: expires))
        return "/object/sign/\(StorageURL.encode(bucket))/\(StorageURL.encode(key))?token=\(token)"
    }

    func signOne(_ request: Request, caller: Caller) async throws -> Response {
        var request = request
        let path = try StoragePath.object(request, skipping: 2)
        let body = try await StorageBody.read(&request)
        let expires = try self.expiry(body)
        if body.member("transform") != nil { throw StorageFailure.notServed("Image transformation") }
        let results = try await self.services.pool.requestTransaction(
            caller.identity, readOnly: true, [StorageStatements.object(bucket: path.bucket, name: path.key)])
        guard let row = results.first?.first else { throw StorageFailure.noSuchBucket }
        guard try row.decode(UUID?.self, "id") != nil else { throw StorageFailure.noSuchKey }
        return try StorageServices.json(SignedURLAnswer(signedURL: try self.signedURL(path.bucket, path.key, app: caller.appID, expires: expires)))
    }

    func signMany(_ request: Request, caller: Caller) async throws -> Response {
        var request = request
        let bucket = try StoragePath.bucket(request, skipping: 2)
        let body = try await StorageBody.read(&request)
        let expires = try self.expiry(body)
        guard let paths = try body.strings("paths"), (1...1000).contains(paths.count) else {
            throw StorageFailure.invalidRequest("body/paths must hold 1 to 1000 names")
        }
        let valid = paths.filter { (try? ObjectName.key($0)) != nil }
        let results = try await self.services.pool.requestTransaction(
            caller.identity, readOnly: true, [StorageStatements.bucketExists(bucket), StorageStatements.visible(bucket: bucket, names: valid)])
        guard results[0].first != nil else { throw StorageFailure.noSuchBucket }
        var visible = Set<String>()
        for row in results[1].rows where try row.decode(Bool.self, "visible") { visible.insert(try row.decode(String.self, "name")) }
        let answers = try paths.map { path -> SignedURLsEntry in
            guard visible.contains(path) else {
                return SignedURLsEntry(error: "Either the object does not exist or you do not have access to it", path: path, signedURL: nil)
            }
            return SignedURLsEntry(error: nil, path: path, signedURL: try self.signedURL(bucket, path, app: caller.appID, expires: expires))
        }
        return try StorageServices.json(answers)
    }
}

struct SignedURLAnswer: Encodable {
    let signedURL: String
}

/// One entry of `createSignedUrls`: every key present (`null` when empty).
struct SignedURLsEntry: Encodable {
    let error: String?
    let path: String
    let signedURL: String?

    enum CodingKeys: String, CodingKey {
        case error, path, signedURL
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.error, forKey: .error)
        try container.encode(self.path, forKey: .path)
        try container.encode(self.signedURL, forKey: .signedURL)
    }
}
