public import AsyncHTTPClient
public import Logging
public import NIOCore
import NIOHTTP1

/// Objects in one bucket of an S3-compatible store (AWS S3, SeaweedFS, MinIO, …), addressed path-style and signed
/// with SigV4 (`x-amz-content-sha256` is the real payload hash, never `UNSIGNED-PAYLOAD`).
///
/// Design: `put` reads the body into one part buffer of `partSize`; a body that ends before the buffer is full is one
/// PutObject, a longer one a multipart upload (CreateMultipartUpload, UploadPart of `partSize` each, the last one
/// smaller, CompleteMultipartUpload), sent one part at a time, so an upload holds about one part in memory (at most
/// `partSize` plus one incoming chunk). The limit is enforced while reading; on `.tooLarge` or any other failure a
/// started multipart upload is aborted (even in a cancelled task). `get` answers once the store's response head is
/// in, and streams the body to the sink as it arrives. Errors are `.unavailable("<Operation> <status> <S3 code>")`
/// or `.unavailable("<Operation>: <transport reason>")`: no credentials, signatures or URLs with secrets (there are
/// none: credentials only travel in the `Authorization` header).
///
/// Limits: no retries (the caller retries or the client does); CopyObject copies at most 5 GiB (S3's single-copy
/// limit); a multipart upload has at most 10,000 parts (80 GB at the default 8 MiB); every request must get its
/// response head within `requestTimeout` (an upload's body is sent within it too) and a download may idle at most the
/// client's read timeout (60 s for the backend's own client).
public struct S3Backend: ObjectBackend {
    /// Where, as whom, and the part size.
    public let configuration: S3Configuration
    /// The HTTP client (the backend's own unless one was injected).
    public let client: HTTPClient
    /// How long a request may take until its response head (default 120 s).
    public let requestTimeout: TimeAmount
    let signer: SigV4Signer
    let logger: Logger
    private let ownsClient: Bool

    /// S3 allows 10,000 parts per multipart upload.
    public static let maximumPartCount = 10_000

    public var kind: String { "s3" }
    public var store: String { "s3:\(self.configuration.endpoint)/\(self.configuration.bucket)" }

    /// - Parameters:
    ///   - httpClient: a client to share; when nil the backend makes its own (on the NIO singleton event loops,
    ///     connect timeout 10 s, read timeout 60 s), which `shutdown()` stops. An injected client is never shut down
    ///     here.
    public init(
        configuration: S3Configuration, httpClient: HTTPClient? = nil, requestTimeout: TimeAmount = .seconds(120),
        logger: Logger = Logger(label: "guestpass.objectstore.s3")
    ) {
        self.configuration = configuration
        self.signer = configuration.signer
        self.requestTimeout = requestTimeout
        self.logger = logger
        if let httpClient {
            self.client = httpClient
            self.ownsClient = false
        } else {
            let timeouts = HTTPClient.Configuration.Timeout(connect: .seconds(10), read: .seconds(60))
            self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(timeout: timeouts))
            self.ownsClient = true
        }
    }

    /// Stops the backend's own HTTP client (not an injected one). Call it once, after the last request.
    public func shutdown() async throws {
        if self.ownsClient { try await self.client.shutdown() }
    }

    // MARK: ObjectBackend

    public func put(_ key: String, from body: inout some ByteSource, limit: Int64, contentType: String) async throws -> Int64 {
        try ObjectKey.validate(key)
        let contentType = Self.headerSafe(contentType) ?? "application/octet-stream"
        let partSize = self.configuration.partSize
        var part = ByteBufferAllocator().buffer(capacity: Int(min(Int64(partSize), max(limit, 0) + 1)))
        var carry: ByteBuffer?
        var total: Int64 = 0
        var upload: MultipartUpload?
        do {
            while true {
                var chunk: ByteBuffer
                if let rest = carry {
                    chunk = rest
                    carry = nil
                } else {
                    guard let next = try await body.next() else { break }
                    total += Int64(next.readableBytes)
                    if total > limit { throw ObjectBackendError.tooLarge(limit: limit) }
                    chunk = next
                }
                if chunk.readableBytes == 0 { continue }
                if part.readableBytes == partSize {  // a full part, and more bytes: it is not the last one
                    var current: MultipartUpload
                    if let upload {
                        current = upload
                    } else {
                        current = try await self.createMultipartUpload(key, contentType: contentType)
                        upload = current
                    }
                    try await self.uploadPart(&current, part)
                    upload = current
                    part.clear()
                }
                let room = partSize - part.readableBytes
                if chunk.readableBytes > room, let head = chunk.readSlice(length: room) {
                    carry = chunk
                    chunk = head
                }
                part.writeBuffer(&chunk)
            }
            if var current = upload {
                try await self.uploadPart(&current, part)
                upload = current
                try await self.completeMultipartUpload(current)
            } else {
                try await self.putObject(key, part, contentType: contentType)
            }
            return total
        } catch {
            if let upload {
                let backend = self
                await Task { await backend.abortMultipartUpload(upload) }.value
            }
            throw error
        }
    }

    public func get(_ key: String, range: ClosedRange<Int64>?) async throws -> ObjectDownload {
        try ObjectKey.validate(key)
        var call = Call(operation: "GetObject", method: .GET, key: key)
        if let range { call.headers.append(("range", "bytes=\(range.lowerBound)-\(range.upperBound)")) }
        let response = try await self.send(call)
        switch response.status.code {
        case 200 where range == nil, 206 where range != nil:
            break
        case 404:
            await Self.drain(response)
            throw ObjectBackendError.notFound
        case 416:
            await Self.drain(response)
            throw ObjectBackendError.unavailable("range outside the object")
        default:
            throw await self.failure("GetObject", response)
        }
        guard let length = response.headers.first(name: "content-length").flatMap({ Int64($0) }), length >= 0,
            range.map({ $0.upperBound - $0.lowerBound + 1 == length }) ?? true
        else {
            throw ObjectBackendError.unavailable("GetObject: unexpected content-length")
        }
        return ObjectDownload(contentLength: length) { sink in
            var received: Int64 = 0
            do {
                for try await chunk in response.body {
                    received += Int64(chunk.readableBytes)
                    try await sink(chunk)
                }
            } catch let error as HTTPClientError {
                throw ObjectBackendError.unavailable("GetObject: \(Self.reason(error))")
            }
            guard received == length else { throw ObjectBackendError.unavailable("GetObject: body cut short") }
        }
    }

    public func copy(from source: String, to destination: String) async throws {
        try ObjectKey.validate(source)
        try ObjectKey.validate(destination)
        let copySource = SigV4Signer.uriEncode(self.path(of: source), keepingSlashes: true)
        let response = try await self.send(
            Call(operation: "CopyObject", method: .PUT, key: destination, headers: [("x-amz-copy-source", copySource)]))
        guard response.status.code == 200 else {
            if response.status.code == 404 {
                await Self.drain(response)
                throw ObjectBackendError.notFound
            }
            throw await self.failure("CopyObject", response)
        }
        let document = await Self.text(of: response, upTo: 1 << 20) ?? ""
        if S3XML.isError(document) {
            throw ObjectBackendError.unavailable("CopyObject 200 \(Self.sanitized(S3XML.value(of: "Code", in: document) ?? ""))")
        }
    }

    /// Deletes the object and aborts any multipart upload of `key` a crash left open (the sweep deletes an orphaned
    /// upload's key; without the abort its parts would stay in the store).
    public func delete(_ key: String) async throws {
        try ObjectKey.validate(key)
        let response = try await self.send(Call(operation: "DeleteObject", method: .DELETE, key: key))
        guard [200, 204, 404].contains(response.status.code) else { throw await self.failure("DeleteObject", response) }
        await Self.drain(response)
        for uploadID in try await self.openUploads(of: key) {
            await self.abortMultipartUpload(MultipartUpload(key: key, uploadID: uploadID))
        }
    }

    public func exists(_ key: String) async throws -> Bool {
        try ObjectKey.validate(key)
        let response = try await self.send(Call(operation: "HeadObject", method: .HEAD, key: key))
        await Self.drain(response)
        switch response.status.code {
        case 200: return true
        case 404: return false
        default: throw ObjectBackendError.unavailable("HeadObject \(response.status.code)")
        }
    }

    // MARK: Bucket

    /// Creates the configured bucket unless it exists (development and tests; production buckets are made by their
    /// operator). An answer of `BucketAlreadyOwnedByYou` counts as success.
    public func ensureBucket() async throws {
        let head = try await self.send(Call(operation: "HeadBucket", method: .HEAD, key: nil))
        await Self.drain(head)
        if head.status.code == 200 { return }
        var call = Call(operation: "CreateBucket", method: .PUT, key: nil)
        if self.configuration.region != "us-east-1" {
            let xml =
                "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>"
                + S3XML.escape(self.configuration.region) + "</LocationConstraint></CreateBucketConfiguration>"
            call.body = ByteBuffer(string: xml)
        }
        let response = try await self.send(call)
        if response.status.code == 200 {
            await Self.drain(response)
            return
        }
        let document = await Self.text(of: response, upTo: 64 << 10) ?? ""
        if response.status.code == 409 && S3XML.value(of: "Code", in: document) == "BucketAlreadyOwnedByYou" { return }
        let code = Self.sanitized(S3XML.value(of: "Code", in: document) ?? "")
        throw ObjectBackendError.unavailable("CreateBucket \(response.status.code) \(code)")
    }

    /// A `Content-Type` value safe to send (printable ASCII, at most 255 characters), or nil.
    static func headerSafe(_ value: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= 255, value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        return value
    }
}
