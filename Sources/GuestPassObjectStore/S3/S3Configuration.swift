/// Where and as whom `S3Backend` stores objects: an S3-compatible endpoint, addressed path-style
/// (`<endpoint>/<bucket>/<key>`), signed with SigV4.
///
/// Design: checked once, at start-up (`init` throws a typed `S3ConfigurationError`), so a request never fails on a
/// malformed setting. `description` and the mirror name the endpoint, region, bucket, access key and part size, never
/// the secret.
public struct S3Configuration: Sendable, CustomStringConvertible, CustomReflectable {
    /// The smallest part S3 accepts (all parts but the last), 5 MiB.
    public static let minimumPartSize = 5 << 20
    /// The largest part S3 accepts, 5 GiB.
    public static let maximumPartSize = 5 << 30
    /// The default part size, 8 MiB: an upload holds about one part in memory.
    public static let defaultPartSize = 8 << 20

    /// `http` or `https`.
    public let scheme: String
    /// The `Host` header: the endpoint's host, and `:port` when it has one.
    public let host: String
    /// The endpoint as given, without a trailing slash (`http://127.0.0.1:8333`).
    public let endpoint: String
    /// The signing region, `us-east-1` by default.
    public let region: String
    /// The bucket every key lives in.
    public let bucket: String
    /// The access key id (public).
    public let accessKeyID: String
    /// The secret access key.
    let secretAccessKey: String
    /// The size of each part of a multipart upload (and the largest body sent as one PutObject).
    public let partSize: Int

    /// - Parameters:
    ///   - endpoint: `http(s)://host[:port]`, no path, query or user info.
    ///   - bucket: an S3 bucket name: 3–63 of `[a-z0-9.-]`, starting and ending with a letter or digit.
    ///   - partSize: at least `minimumPartSize`, at most `maximumPartSize`.
    public init(
        endpoint: String, region: String = "us-east-1", bucket: String, accessKeyID: String, secretAccessKey: String,
        partSize: Int = S3Configuration.defaultPartSize
    ) throws(S3ConfigurationError) {
        var endpoint = endpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        let scheme: String
        if endpoint.hasPrefix("http://") {
            scheme = "http"
        } else if endpoint.hasPrefix("https://") {
            scheme = "https"
        } else {
            throw .invalidEndpoint
        }
        let host = String(endpoint.dropFirst(scheme.count + 3))
        guard !host.isEmpty, host.utf8.allSatisfy(Self.isHostByte) else { throw .invalidEndpoint }
        guard Self.isBucketName(bucket) else { throw .invalidBucket }
        guard !region.isEmpty, region.utf8.allSatisfy(Self.isHostByte) else { throw .invalidRegion }
        guard !accessKeyID.isEmpty, !secretAccessKey.isEmpty else { throw .missingCredentials }
        guard partSize >= Self.minimumPartSize, partSize <= Self.maximumPartSize else { throw .invalidPartSize }
        self.scheme = scheme
        self.host = host
        self.endpoint = endpoint
        self.region = region
        self.bucket = bucket
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.partSize = partSize
    }

    public var description: String {
        "S3Configuration(endpoint: \(self.endpoint), region: \(self.region), bucket: \(self.bucket), "
            + "accessKeyID: \(self.accessKeyID), partSize: \(self.partSize))"
    }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "endpoint": self.endpoint, "region": self.region, "bucket": self.bucket, "accessKeyID": self.accessKeyID,
                "partSize": self.partSize,
            ])
    }

    /// The signer for this configuration's credentials and region (service `s3`).
    var signer: SigV4Signer {
        SigV4Signer(accessKeyID: self.accessKeyID, secretAccessKey: self.secretAccessKey, region: self.region)
    }

    /// Letters, digits and `.-:[]` (a host, a port, an IPv6 literal; a region).
    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"):
            true
        default:
            false
        }
    }

    private static func isBucketName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        func isAlphanumeric(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        guard (3...63).contains(bytes.count), let first = bytes.first, let last = bytes.last else { return false }
        return isAlphanumeric(first) && isAlphanumeric(last)
            && bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }
}

/// Why an `S3Configuration` was refused (the values themselves are not echoed).
public enum S3ConfigurationError: Error, Equatable, Sendable {
    /// The endpoint is not `http(s)://host[:port]`.
    case invalidEndpoint
    /// The bucket is not an S3 bucket name.
    case invalidBucket
    /// The region is empty or has characters a region never has.
    case invalidRegion
    /// The access key id or the secret is empty.
    case missingCredentials
    /// The part size is outside 5 MiB…5 GiB.
    case invalidPartSize
}
