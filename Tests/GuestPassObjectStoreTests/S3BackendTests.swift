import GuestPassObjectStore
import NIOCore
import Testing

/// What only the S3 backend promises: its configuration checks, error texts without credentials, the bucket set-up.
@Suite struct S3BackendTests {
    @Test func configurationIsChecked() throws {
        let good = (endpoint: "http://127.0.0.1:8333", bucket: "bucket-1", key: "AKID", secret: "secret")
        #expect(throws: S3ConfigurationError.invalidEndpoint) {
            try S3Configuration(endpoint: "ftp://x", bucket: good.bucket, accessKeyID: good.key, secretAccessKey: good.secret)
        }
        #expect(throws: S3ConfigurationError.invalidEndpoint) {
            try S3Configuration(endpoint: "http://host/path", bucket: good.bucket, accessKeyID: good.key, secretAccessKey: good.secret)
        }
        #expect(throws: S3ConfigurationError.invalidBucket) {
            try S3Configuration(endpoint: good.endpoint, bucket: "Bad_Bucket", accessKeyID: good.key, secretAccessKey: good.secret)
        }
        #expect(throws: S3ConfigurationError.missingCredentials) {
            try S3Configuration(endpoint: good.endpoint, bucket: good.bucket, accessKeyID: good.key, secretAccessKey: "")
        }
        #expect(throws: S3ConfigurationError.invalidPartSize) {
            try S3Configuration(endpoint: good.endpoint, bucket: good.bucket, accessKeyID: good.key, secretAccessKey: good.secret, partSize: 1 << 20)
        }
        let configuration = try S3Configuration(
            endpoint: "https://s3.example.com:9000/", bucket: good.bucket, accessKeyID: good.key, secretAccessKey: good.secret)
        #expect(configuration.host == "s3.example.com:9000")
        #expect(configuration.endpoint == "https://s3.example.com:9000")
        #expect(configuration.partSize == 8 << 20)
        #expect(configuration.region == "us-east-1")
    }

    /// A wrong secret is refused by the store (SignatureDoesNotMatch); the error names the operation and S3's code,
    /// never the secret.
    @Test func aWrongSecretFailsWithoutLeakingIt() async throws {
        let secret = "not-the-secret-\(freshKey())"
        let backend = S3Backend(configuration: try s3Configuration(secret: secret))
        defer { Task { try? await backend.shutdown() } }
        let error = try await backendError { try await put(backend, freshKey(), [1, 2, 3]) }
        guard case .unavailable(let text) = error else {
            Issue.record("expected .unavailable, got \(String(describing: error))")
            return
        }
        #expect(text.hasPrefix("PutObject 403"), "\(text)")
        #expect(!text.contains(secret))
        try await backend.shutdown()
    }

    @Test func ensureBucketIsIdempotent() async throws {
        try await withS3Backend { backend in
            try await backend.ensureBucket()
            try await backend.ensureBucket()
            #expect(backend.kind == "s3")
        }
    }

    /// Nothing listens: the error is `.unavailable` naming the operation (AsyncHTTPClient retries refused connections
    /// until the request's deadline, here 2 s).
    @Test func anUnreachableStoreIsUnavailable() async throws {
        let configuration = try S3Configuration(endpoint: "http://127.0.0.1:1", bucket: "bucket", accessKeyID: "AKID", secretAccessKey: "secret")
        let backend = S3Backend(configuration: configuration, requestTimeout: .seconds(2))
        let error = try await backendError { _ = try await backend.exists(freshKey()) }
        try await backend.shutdown()
        guard case .unavailable(let text) = error else {
            Issue.record("expected .unavailable, got \(String(describing: error))")
            return
        }
        #expect(text.hasPrefix("HeadObject: "), "\(text)")
    }
}
