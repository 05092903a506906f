import Foundation
import GuestPassCrypto
import GuestPassObjectStore
import GuestPassPostgres
import GuestPassStore
import HTTPTypes
import Hummingbird
import NIOCore
import StorageProtocol

/// Uploads: `POST` (new, or with `x-upsert: true` replace) and `PUT` (always an upsert, as the real server does)
/// `/object/{bucket}/{key}`, multipart from either SDK or a raw body; signed upload URLs (`POST` and `PUT
/// /object/upload/sign/{bucket}/{key}`).
///
/// Order, for consistency: (1) one request transaction reserves a fresh version and tries the write under the
/// caller's policies, rolled back (so a refusal, a missing bucket, a MIME type or a quota come before any byte);
/// (2) the bytes stream to the backend under `<app>/<version>`, within the size limit, durable before (3) the row is
/// written in a second request transaction, under the caller's policies again. A crash between (2) and (3) leaves
/// bytes only the sweep knows; a failed (3) deletes them at once. A row never names bytes that are not whole.
struct StorageUploadRoutes: Sendable {
    let services: StorageServices

    /// `POST`/`PUT /object/{bucket}/{key}`.
    func upload(_ request: Request, caller: Caller, channel: any Channel) async throws -> Response {
        let path = try StoragePath.object(request, skipping: 1)
        // PUT is always an upsert, as on the real server; POST only with `x-upsert: true`.
        let upsert = request.method == .put || request.headers[.xUpsert] == "true"
        return try await self.upload(request, path: path, caller: caller, upsert: upsert, channel: channel)
    }

    /// `PUT /object/upload/sign/{bucket}/{key}?token=`: no API key; the token's signer is the owner.
    func uploadSigned(_ request: Request, channel: any Channel) async throws -> Response {
        let path = try StoragePath.object(request, skipping: 3)
        let claims = try self.services.signer.verify(request.uri.queryParameters.get("token"), scope: .upload, url: "\(path.bucket)/\(path.key)")
        let identity = self.services.serviceIdentity(app: claims.app)
        _ = try await self.store(
            request, path: path, identity: identity, app: claims.app, owner: claims.owner, device: claims.device, upsert: claims.upsert ?? false,
            channel: channel)
        // The signed upload answers the key only, as Supabase does.
        return try StorageServices.json(SignedUploadAnswer(Key: "\(path.bucket)/\(path.key)"))
    }

    private func upload(_ request: Request, path: StoragePath, caller: Caller, upsert: Bool, channel: any Channel) async throws -> Response {
        let id = try await self.store(
            request, path: path, identity: caller.identity, app: caller.appID, owner: nil, device: nil, upsert: upsert, channel: channel)
        return try StorageServices.json(UploadAnswer(Id: id.lowercasedString, Key: "\(path.bucket)/\(path.key)"))
    }

    /// Stores one upload; the object's id.
    private func store(
        _ request: Request, path: StoragePath, identity: RequestIdentity, app: UUID, owner: UUID?, device: UUID?, upsert: Bool,
        channel: any Channel
    ) async throws -> UUID {
        let (description, body) = try await UploadBodySource.open(request, channel: channel)
        var source = body
        let version = UUID().lowercasedString
        let key = StorageServices.backendKey(app: app, version: version)
        var write = StorageStatements.ObjectWrite(
            id: UUID(), bucket: path.bucket, name: path.key, owner: owner, device: device, version: version, store: self.services.backend.store,
            metadataJSON: try StorageServices.systemMetadata(
                mimeType: description.mimeType, cacheControl: description.cacheControl, size: description.declaredLength ?? 0, version: version),
            userMetadataJSON: description.userMetadataJSON, upsert: upsert)
        let begun = try await self.services.run(
            identity,
            StorageStatements.beginUpload(
                write, mimeType: description.mimeType, declaredLength: description.declaredLength, graceSeconds: self.services.uploadGraceSeconds))
        guard begun.count > 1, let plan = begun[1].first else { throw StorageFailure.noSuchBucket }
        let sizeLimit = try plan.decode(Int64.self, "size_limit")
        let bytesLeft = try plan.decode(Int64?.self, "user_bytes_left")
        let limit = min(sizeLimit, bytesLeft ?? sizeLimit)
        let size: Int64
        do {
            size = try await self.services.backend.put(key, from: &source, limit: limit, contentType: description.mimeType)
        } catch ObjectBackendError.tooLarge {
            await self.services.abandon(key)
            if let bytesLeft, bytesLeft < sizeLimit { throw StorageFailure.quota("no more bytes") }
            throw StorageFailure.tooLarge
        } catch {
            await self.services.abandon(key)
            throw error
        }
        ServiceMetrics.storageBytes("in", size, backend: self.services.backend.kind)
        write.metadataJSON = try StorageServices.systemMetadata(
            mimeType: description.mimeType, cacheControl: description.cacheControl, size: size, version: version)
        do {
            let results = try await self.services.run(identity, [StorageStatements.writeObject(write)])
            ServiceMetrics.storageObjects("upload")
            if upsert, let id = try results.first?.first?.decode(UUID.self, "id") { return id }
            return write.id
        } catch {
            await self.services.abandon(key)
            throw error
        }
    }

    /// `POST /object/upload/sign/{bucket}/{key}`: the caller's policies are tried now (as Supabase's dry run), the
    /// token carries the caller as the owner.
    func createSignedUpload(_ request: Request, caller: Caller) async throws -> Response {
        let path = try StoragePath.object(request, skipping: 3)
        let upsert = request.headers[.xUpsert] == "true"
        let write = StorageStatements.ObjectWrite(
            id: UUID(), bucket: path.bucket, name: path.key, owner: nil, device: nil, version: UUID().lowercasedString,
            store: self.services.backend.store, metadataJSON: "{}", userMetadataJSON: nil, upsert: upsert)
        _ = try await self.services.run(
            caller.identity,
            StorageStatements.signedUploadCheck(write))
        let claims = StorageSigner.Claims(
            url: "\(path.bucket)/\(path.key)", scope: .upload, app: caller.appID,
            exp: Int(Date().timeIntervalSince1970) + self.services.signedUploadSeconds, owner: caller.token?.userID,
            device: caller.token?.deviceID, upsert: upsert)
        let token = try self.services.signer.token(claims)
        let url = "/object/upload/sign/\(StorageURL.encode(path.bucket))/\(StorageURL.encode(path.key))?token=\(token)"
        return try StorageServices.json(SignedUploadURLAnswer(url: url, token: token))
    }
}

struct UploadAnswer: Encodable {
    let Id: String
    let Key: String
}

struct SignedUploadAnswer: Encodable {
    let Key: String
}

struct SignedUploadURLAnswer: Encodable {
    let url: String
    let token: String
}

struct SystemMetadata: Encodable {
    let eTag: String
    let size: Int64
    let mimetype: String
    let cacheControl: String
    let lastModified: String
    let contentLength: Int64
    let httpStatusCode: Int
}

/// Percent-encoding of a bucket or key for a URL path (each segment; `/` kept).
enum StorageURL {
    static func encode(_ text: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#;")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
