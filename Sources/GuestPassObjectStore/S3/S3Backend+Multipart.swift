import AsyncHTTPClient
import GuestPassCrypto
import NIOCore
import NIOHTTP1
import Logging

/// PutObject and the multipart upload's four calls.
extension S3Backend {
    /// A multipart upload in progress: its key, id and the parts sent so far (number, ETag).
    struct MultipartUpload: Sendable {
        let key: String
        let uploadID: String
        var parts: [(number: Int, etag: String)] = []
    }

    /// PutObject of a body known whole (`body` is at most one part).
    func putObject(_ key: String, _ body: ByteBuffer, contentType: String) async throws {
        let response = try await self.send(
            Call(operation: "PutObject", method: .PUT, key: key, headers: [("content-type", contentType)], body: body))
        guard response.status.code == 200 else { throw await self.failure("PutObject", response) }
        await Self.drain(response)
    }

    func createMultipartUpload(_ key: String, contentType: String) async throws -> MultipartUpload {
        let response = try await self.send(
            Call(
                operation: "CreateMultipartUpload", method: .POST, key: key, query: [("uploads", "")],
                headers: [("content-type", contentType)]))
        guard response.status.code == 200 else { throw await self.failure("CreateMultipartUpload", response) }
        let document = await Self.text(of: response, upTo: 64 << 10) ?? ""
        guard let uploadID = S3XML.value(of: "UploadId", in: document), !uploadID.isEmpty else {
            throw ObjectBackendError.unavailable("CreateMultipartUpload: no UploadId")
        }
        return MultipartUpload(key: key, uploadID: uploadID)
    }

    /// Sends `body` as the next part of `upload` and records its ETag.
    func uploadPart(_ upload: inout MultipartUpload, _ body: ByteBuffer) async throws {
        let number = upload.parts.count + 1
        guard number <= Self.maximumPartCount else { throw ObjectBackendError.unavailable("UploadPart: more than 10000 parts") }
        let response = try await self.send(
            Call(
                operation: "UploadPart", method: .PUT, key: upload.key,
                query: [("partNumber", String(number)), ("uploadId", upload.uploadID)], body: body))
        guard response.status.code == 200 else { throw await self.failure("UploadPart", response) }
        await Self.drain(response)
        guard let etag = response.headers.first(name: "etag"), !etag.isEmpty else {
            throw ObjectBackendError.unavailable("UploadPart: no ETag")
        }
        upload.parts.append((number, etag))
    }

    func completeMultipartUpload(_ upload: MultipartUpload) async throws {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in upload.parts {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(S3XML.escape(part.etag))</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let response = try await self.send(
            Call(
                operation: "CompleteMultipartUpload", method: .POST, key: upload.key, query: [("uploadId", upload.uploadID)],
                headers: [("content-type", "application/xml")], body: ByteBuffer(string: xml)))
        guard response.status.code == 200 else { throw await self.failure("CompleteMultipartUpload", response) }
        // S3 may answer 200 and still fail: the error is then the body.
        let document = await Self.text(of: response, upTo: 1 << 20) ?? ""
        if S3XML.isError(document) {
            let code = Self.sanitized(S3XML.value(of: "Code", in: document) ?? "")
            throw ObjectBackendError.unavailable("CompleteMultipartUpload 200 \(code)")
        }
    }

    /// Best effort: a failure is logged, not thrown (the caller is already failing; a lifecycle rule or the sweep
    /// reclaims what stays).
    func abortMultipartUpload(_ upload: MultipartUpload) async {
        do {
            let response = try await self.send(
                Call(operation: "AbortMultipartUpload", method: .DELETE, key: upload.key, query: [("uploadId", upload.uploadID)]))
            guard [200, 204, 404].contains(response.status.code) else {
                let error = await self.failure("AbortMultipartUpload", response)
                self.logger.warning("S3 multipart upload not aborted", metadata: ["key": "\(upload.key)", "error": "\(error)"])
                return
            }
            await Self.drain(response)
        } catch {
            self.logger.warning("S3 multipart upload not aborted", metadata: ["key": "\(upload.key)", "error": "\(Self.reason(error))"])
        }
    }

    /// The ids of the multipart uploads of exactly `key` still open.
    func openUploads(of key: String) async throws -> [String] {
        let query: [(name: String, value: String)] = [("uploads", ""), ("prefix", key)]
        let response = try await self.send(Call(operation: "ListMultipartUploads", method: .GET, key: nil, query: query))
        guard response.status.code == 200 else { throw await self.failure("ListMultipartUploads", response) }
        guard let document = await Self.text(of: response, upTo: 8 << 20) else {
            throw ObjectBackendError.unavailable("ListMultipartUploads: answer too large")
        }
        return S3XML.values(of: "Upload", in: document).compactMap { upload in
            S3XML.value(of: "Key", in: upload) == key ? S3XML.value(of: "UploadId", in: upload) : nil
        }
    }

    /// The keys of the multipart uploads in progress in the bucket (at most 1,000; for tests and the orphan sweep).
    public func multipartUploadsInProgress(prefix: String = "") async throws -> [String] {
        var query: [(name: String, value: String)] = [("uploads", "")]
        if !prefix.isEmpty { query.append(("prefix", prefix)) }
        let response = try await self.send(Call(operation: "ListMultipartUploads", method: .GET, key: nil, query: query))
        guard response.status.code == 200 else { throw await self.failure("ListMultipartUploads", response) }
        guard let document = await Self.text(of: response, upTo: 8 << 20) else {
            throw ObjectBackendError.unavailable("ListMultipartUploads: answer too large")
        }
        return S3XML.values(of: "Upload", in: document).compactMap { S3XML.value(of: "Key", in: $0) }
    }
}
