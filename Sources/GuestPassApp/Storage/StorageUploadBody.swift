import Foundation
import GuestPassJSON
import GuestPassObjectStore
import HTTPTypes
import Hummingbird
import NIOCore
import StorageProtocol

/// What an upload's body says about the object before its bytes: its MIME type, cache control and user metadata,
/// from the form fields and the file part (multipart) or the headers (a raw body), as Supabase Storage reads them.
struct UploadDescription {
    var mimeType: String
    var cacheControl: String
    var userMetadataJSON: String?
    /// The body's declared length, for a raw body (checked against the limit before any byte is read).
    var declaredLength: Int64?
}

/// The file bytes of an upload as a `ByteSource`: a raw body passed through, or the first file part of a
/// `multipart/form-data` body, read as it arrives (`MultipartParser`). A cut-off upload fails instead of storing a
/// prefix: a multipart body must reach its closing boundary, a raw body its `Content-Length` (or, chunked, end with
/// its connection still open).
struct UploadBodySource: ByteSource {
    private var iterator: RequestBody.AsyncIterator
    private var parser: MultipartParser?
    /// The connection the body arrives on: a raw body that ends because the client went away is not a whole body.
    private let channel: any Channel
    /// A raw body's `Content-Length`, and the bytes read so far.
    private var declaredLength: Int64?
    private var received: Int64 = 0
    private var queued: [MultipartParser.Event] = []
    private var fileEnded = false
    /// Bytes read after the file part (parts the server drops), bounded.
    private var trailingBytes = 0
    private static let maxTrailingBytes = 1024 * 1024

    /// Opens `request`'s body: for multipart, reads up to the file part's headers (400 `No content provided` when
    /// the body holds no file part).
    static func open(_ request: Request, channel: any Channel) async throws -> (UploadDescription, UploadBodySource) {
        let contentType = request.headers[.contentType] ?? ""
        var source = UploadBodySource(iterator: request.body.makeAsyncIterator(), parser: nil, channel: channel)
        guard let boundary = MultipartParser.boundary(contentType: contentType) else {
            if contentType.lowercased().hasPrefix("multipart/") {
                throw StorageFailure.invalidRequest("A multipart body needs multipart/form-data with a boundary")
            }
            let description = UploadDescription(
                mimeType: try Self.mimeType(contentType.isEmpty ? nil : contentType),
                cacheControl: try Self.cacheControlHeader(request.headers[.cacheControl]),
                userMetadataJSON: Self.headerMetadata(request.headers[.xMetadata]),
                declaredLength: request.headers[.contentLength].flatMap { Int64($0) })
            source.declaredLength = description.declaredLength
            return (description, source)
        }
        source.parser = MultipartParser(boundary: boundary)
        var fields: [String: [UInt8]] = [:]
        while true {
            guard let event = try await source.nextEvent() else { throw StorageFailure.noContent }
            switch event {
            case .field(let name, let value): fields[name] = value
            case .fileStart(let part):
                let declared = fields["contentType"].map { String(decoding: $0, as: UTF8.self) }
                let cacheControl = fields["cacheControl"].map { String(decoding: $0, as: UTF8.self) }
                let description = UploadDescription(
                    mimeType: try Self.mimeType(declared ?? part.contentType),
                    cacheControl: try Self.cacheControlField(cacheControl),
                    userMetadataJSON: Self.metadata(fields["metadata"] ?? fields["userMetadata"]),
                    declaredLength: nil)
                return (description, source)
            case .fileBytes, .fileEnd:
                throw StorageFailure.noContent
            }
        }
    }

    mutating func next() async throws -> ByteBuffer? {
        guard self.parser != nil else {
            guard let chunk = try await self.iterator.next() else {
                // Hummingbird ends a body the same way whether it arrived whole or the client went away mid-body: a
                // raw body must have its declared length, and a chunked one its connection still open at the end.
                if let declared = self.declaredLength, self.received != declared { throw MultipartParser.Failure.truncated }
                if self.declaredLength == nil, !self.channel.isActive { throw MultipartParser.Failure.truncated }
                return nil
            }
            self.received += Int64(chunk.readableBytes)
            return chunk
        }
        while !self.fileEnded {
            guard let event = try await self.nextEvent() else { throw MultipartParser.Failure.truncated }
            switch event {
            case .fileBytes(let bytes): return bytes
            case .fileEnd: self.fileEnded = true
            case .field, .fileStart: continue
            }
        }
        // The file is whole; the body must still reach its closing boundary.
        while self.parser?.isComplete == false {
            guard let chunk = try await self.iterator.next() else { break }
            self.trailingBytes += chunk.readableBytes
            guard self.trailingBytes <= Self.maxTrailingBytes else { throw MultipartParser.Failure.tooLarge("parts after the file over 1 MiB") }
            _ = try self.parser?.feed(chunk)
        }
        try self.parser?.finish()
        return nil
    }

    /// The parser's next event, reading the body as needed; nil when the body ends.
    private mutating func nextEvent() async throws -> MultipartParser.Event? {
        while self.queued.isEmpty {
            guard let chunk = try await self.iterator.next() else {
                try self.parser?.finish()
                return nil
            }
            self.queued = try self.parser?.feed(chunk) ?? []
            self.queued.reverse()
        }
        return self.queued.popLast()
    }

    /// A MIME type as stored: `type/subtype` with optional parameters, printable ASCII, at most 255 bytes.
    private static func mimeType(_ value: String?) throws -> String {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return "application/octet-stream" }
        let essence = value.split(separator: ";", maxSplits: 1)[0].trimmingCharacters(in: .whitespaces)
        let parts = essence.split(separator: "/", omittingEmptySubsequences: false)
        guard value.utf8.count <= 255, value.utf8.allSatisfy({ $0 >= 32 && $0 < 127 }), parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty
        else { throw StorageFailure.invalidMimeType(value) }
        return value
    }

    /// The form's `cacheControl` (seconds) as `max-age=N`; `no-cache` without one, as Supabase stores it.
    private static func cacheControlField(_ value: String?) throws -> String {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return "no-cache" }
        guard value.count <= 12, value.allSatisfy(\.isASCIIDigitCharacter) else {
            throw StorageFailure.invalidRequest("cacheControl must be a number of seconds")
        }
        return "max-age=\(value)"
    }

    /// A raw body's `Cache-Control` header, kept as sent (printable ASCII, at most 256 bytes); `no-cache` without one.
    private static func cacheControlHeader(_ value: String?) throws -> String {
        guard let value, !value.isEmpty else { return "no-cache" }
        guard value.utf8.count <= 256, value.utf8.allSatisfy({ $0 >= 32 && $0 < 127 }) else {
            throw StorageFailure.invalidRequest("Cache-Control must be printable ASCII of at most 256 bytes")
        }
        return value
    }

    /// The form's `metadata`: a JSON object kept as the user metadata; anything else is ignored, as Supabase does.
    private static func metadata(_ bytes: [UInt8]?) -> String? {
        guard let bytes, !bytes.isEmpty, case .object? = try? JSONParser.parse(bytes) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `x-metadata`: base64 of a JSON object.
    private static func headerMetadata(_ value: String?) -> String? {
        guard let value, let data = Data(base64Encoded: value) else { return nil }
        return Self.metadata(Array(data))
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { self >= "0" && self <= "9" }
}

extension HTTPField.Name {
    static let xMetadata = Self("x-metadata")!
    static let xUpsert = Self("x-upsert")!
}
