import Foundation
public import GuestPassObjectStore

/// Where objects' bytes live and the storage API's timings, read from the environment:
/// - `GUESTPASS_STORAGE_BACKEND`: `file` (default) or `s3`.
/// - `GUESTPASS_STORAGE_DIR`: the file backend's data directory (`./scripts/serve` sets `.dev/storage`).
/// - `GUESTPASS_S3_ENDPOINT`, `GUESTPASS_S3_REGION` (default us-east-1), `GUESTPASS_S3_BUCKET`,
///   `GUESTPASS_S3_ACCESS_KEY_ID`, `GUESTPASS_S3_SECRET_ACCESS_KEY` (or `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`),
///   `GUESTPASS_S3_PART_SIZE` (bytes, default 8 MiB): an S3-compatible store, path-style.
/// - `GUESTPASS_STORAGE_UPLOAD_GRACE_SECONDS` (default 86400): how long an upload may take before the sweep may
///   reclaim its bytes as an orphan's.
/// - `GUESTPASS_STORAGE_SIGNED_UPLOAD_SECONDS` (default 7200, hosted Supabase's): a signed upload URL's life.
/// Without a directory or an S3 store the storage routes answer 503 `storage is not configured`.
public struct StorageConfiguration: Sendable {
    public enum Backend: Sendable {
        case fileSystem(root: String)
        case s3(S3Settings)
    }

    /// An S3-compatible store's settings as given (checked when the backend is made); never printed.
    public struct S3Settings: Sendable, CustomStringConvertible {
        public var endpoint: String
        public var region: String
        public var bucket: String
        public var accessKeyID: String
        public var secretAccessKey: String
        public var partSize: Int?
        public var description: String { "S3Settings(endpoint: \(self.endpoint), bucket: \(self.bucket), secret: <redacted>)" }
    }

    public var backend: Backend?
    public var uploadGraceSeconds = 86400
    public var signedUploadSeconds = 7200

    public init(backend: Backend? = nil) {
        self.backend = backend
    }

    public init(environment: [String: String]) throws {
        let kind = environment["GUESTPASS_STORAGE_BACKEND"].flatMap { $0.isEmpty ? nil : $0 } ?? "file"
        switch kind {
        case "file":
            if let root = environment["GUESTPASS_STORAGE_DIR"], !root.isEmpty { self.backend = .fileSystem(root: root) }
        case "s3":
            func value(_ names: String...) -> String? { names.lazy.compactMap { environment[$0] }.first { !$0.isEmpty } }
            guard let endpoint = value("GUESTPASS_S3_ENDPOINT"), let bucket = value("GUESTPASS_S3_BUCKET"),
                let keyID = value("GUESTPASS_S3_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"),
                let secret = value("GUESTPASS_S3_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY")
            else {
                throw ConfigurationError(
                    "GUESTPASS_STORAGE_BACKEND=s3 needs GUESTPASS_S3_ENDPOINT, GUESTPASS_S3_BUCKET, GUESTPASS_S3_ACCESS_KEY_ID and GUESTPASS_S3_SECRET_ACCESS_KEY"
                )
            }
            var settings = S3Settings(
                endpoint: endpoint, region: value("GUESTPASS_S3_REGION") ?? "us-east-1", bucket: bucket, accessKeyID: keyID,
                secretAccessKey: secret)
            if let text = value("GUESTPASS_S3_PART_SIZE") {
                guard let size = Int(text), size >= 5 << 20, size <= 1 << 30 else {
                    throw ConfigurationError("GUESTPASS_S3_PART_SIZE must be 5 MiB to 1 GiB in bytes, got \(text)")
                }
                settings.partSize = size
            }
            self.backend = .s3(settings)
        default:
            throw ConfigurationError("GUESTPASS_STORAGE_BACKEND must be file or s3, got \(kind)")
        }
        if let text = environment["GUESTPASS_STORAGE_UPLOAD_GRACE_SECONDS"], !text.isEmpty {
            guard let seconds = Int(text), (60...604_800).contains(seconds) else {
                throw ConfigurationError("GUESTPASS_STORAGE_UPLOAD_GRACE_SECONDS must be 60 to 604800, got \(text)")
            }
            self.uploadGraceSeconds = seconds
        }
        if let text = environment["GUESTPASS_STORAGE_SIGNED_UPLOAD_SECONDS"], !text.isEmpty {
            guard let seconds = Int(text), (1...604_800).contains(seconds) else {
                throw ConfigurationError("GUESTPASS_STORAGE_SIGNED_UPLOAD_SECONDS must be 1 to 604800, got \(text)")
            }
            self.signedUploadSeconds = seconds
        }
    }

    /// Makes the S3 store's bucket when it is missing (nothing for the file system, whose directory `makeBackend`
    /// creates).
    public func prepare() async throws {
        guard case .s3 = self.backend, let backend = try self.makeBackend() as? S3Backend else { return }
        do {
            try await backend.ensureBucket()
        } catch {
            try? await backend.shutdown()
            throw error
        }
        try? await backend.shutdown()
    }

    /// The backend this configuration names (nil: none configured). Opens (and for the file system creates) it.
    public func makeBackend() throws -> (any ObjectBackend)? {
        switch self.backend {
        case nil: return nil
        case .fileSystem(let root): return try FileSystemBackend(root: root)
        case .s3(let settings):
            let configuration: S3Configuration
            do {
                configuration = try S3Configuration(
                    endpoint: settings.endpoint, region: settings.region, bucket: settings.bucket, accessKeyID: settings.accessKeyID,
                    secretAccessKey: settings.secretAccessKey, partSize: settings.partSize ?? S3Configuration.defaultPartSize)
            } catch {
                throw ConfigurationError("the S3 settings are not valid (\(error)): \(settings)")
            }
            return S3Backend(configuration: configuration)
        }
    }
}
