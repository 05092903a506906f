import GuestPassCrypto

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`) for requests signed in the `Authorization` header.
///
/// Design: pure functions over text, step by step as AWS documents them (canonical request, string to sign, signing
/// key, signature), each public so the tests check every step against AWS's published test suite. The service name
/// is a parameter (`s3` for the backend, `service` for the suite). Paths are given decoded and URI-encoded here once,
/// as S3 wants (no double encoding); `normalizePath` removes dot segments and empty segments for the services that
/// want it (never for S3, where `a//b` is a key). Query items are given decoded, encoded and sorted here.
///
/// Limits: no session tokens, no presigned (query-string) URLs, no chunked (`STREAMING-…`) payload signing: a payload
/// is signed by its whole SHA-256 hex (or an `UNSIGNED-PAYLOAD` the caller chooses).
/// The secret never appears in `description`, in a mirror or in any output but the signature.
public struct SigV4Signer: Sendable, CustomStringConvertible, CustomReflectable {
    /// The public half of the credentials.
    public let accessKeyID: String
    private let secretAccessKey: String
    /// The region of the scope, e.g. `us-east-1`.
    public let region: String
    /// The service of the scope, e.g. `s3`.
    public let service: String

    /// The hex SHA-256 of an empty payload.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public init(accessKeyID: String, secretAccessKey: String, region: String, service: String = "s3") {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.region = region
        self.service = service
    }

    public var description: String {
        "SigV4Signer(accessKeyID: \(self.accessKeyID), region: \(self.region), service: \(self.service))"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["accessKeyID": self.accessKeyID, "region": self.region, "service": self.service])
    }

    /// What of a request the signature covers.
    public struct Request: Sendable {
        /// `GET`, `PUT`, …
        public var method: String
        /// The decoded path, starting with `/` (e.g. `/bucket/a b`); encoded by the signer.
        public var path: String
        /// The decoded query items, in any order.
        public var query: [(name: String, value: String)]
        /// Every header to sign (names in any case, `host` and `x-amz-date` included); repeated names are joined.
        public var headers: [(name: String, value: String)]
        /// The payload's hex SHA-256 (`x-amz-content-sha256` for S3).
        public var payloadHash: String

        public init(
            method: String, path: String, query: [(name: String, value: String)] = [], headers: [(name: String, value: String)],
            payloadHash: String
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    // MARK: Steps

    /// The canonical request: method, canonical URI, canonical query, canonical headers, signed headers, payload hash.
    public static func canonicalRequest(_ request: Request, normalizePath: Bool = false) -> String {
        let headers = Self.canonicalHeaders(request.headers)
        return [
            request.method, Self.canonicalURI(request.path, normalize: normalizePath), Self.canonicalQuery(request.query),
            headers.canonical, headers.signed, request.payloadHash,
        ].joined(separator: "\n")
    }

    /// `AWS4-HMAC-SHA256`, the time, the scope and the hex SHA-256 of the canonical request, one per line.
    public func stringToSign(canonicalRequest: String, timestamp: SigV4Timestamp) -> String {
        ["AWS4-HMAC-SHA256", timestamp.amzDate, self.scope(timestamp), Digest.sha256Hex(canonicalRequest)].joined(separator: "\n")
    }

    /// `<date>/<region>/<service>/aws4_request`.
    public func scope(_ timestamp: SigV4Timestamp) -> String {
        "\(timestamp.dateStamp)/\(self.region)/\(self.service)/aws4_request"
    }

    /// The hex HMAC of `stringToSign` under the signing key of the timestamp's day.
    public func signature(stringToSign: String, timestamp: SigV4Timestamp) -> String {
        let date = HMACSHA256.authenticationCode(for: Array(timestamp.dateStamp.utf8), key: Array("AWS4\(self.secretAccessKey)".utf8))
        let region = HMACSHA256.authenticationCode(for: Array(self.region.utf8), key: date)
        let service = HMACSHA256.authenticationCode(for: Array(self.service.utf8), key: region)
        let signing = HMACSHA256.authenticationCode(for: Array("aws4_request".utf8), key: service)
        return Digest.hex(HMACSHA256.authenticationCode(for: Array(stringToSign.utf8), key: signing))
    }

    /// The `Authorization` header's value for `request` (whose headers must already hold `x-amz-date`).
    public func authorization(for request: Request, timestamp: SigV4Timestamp, normalizePath: Bool = false) -> String {
        let canonical = Self.canonicalRequest(request, normalizePath: normalizePath)
        let signature = self.signature(stringToSign: self.stringToSign(canonicalRequest: canonical, timestamp: timestamp), timestamp: timestamp)
        let signed = Self.canonicalHeaders(request.headers).signed
        return "AWS4-HMAC-SHA256 Credential=\(self.accessKeyID)/\(self.scope(timestamp)), SignedHeaders=\(signed), Signature=\(signature)"
    }

    // MARK: Canonical parts

    /// Each path segment URI-encoded (once); with `normalize`, `.`/`..` and empty segments are resolved first, and a
    /// trailing `/` is kept. An empty path is `/`.
    public static func canonicalURI(_ path: String, normalize: Bool) -> String {
        guard normalize else {
            return path.isEmpty ? "/" : Self.uriEncode(path, keepingSlashes: true)
        }
        var kept: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for segment in segments {
            switch segment {
            case "", ".": continue
            case "..": _ = kept.popLast()
            default: kept.append(segment)
            }
        }
        let last = segments.last ?? ""
        let trailingSlash = !kept.isEmpty && (last.isEmpty || last == "." || last == "..")
        let joined = "/" + kept.map { Self.uriEncode(String($0), keepingSlashes: false) }.joined(separator: "/")
        return trailingSlash ? joined + "/" : joined
    }

    /// `name=value` pairs, both URI-encoded, sorted by name then value, joined by `&`.
    public static func canonicalQuery(_ items: [(name: String, value: String)]) -> String {
        items.map { (Self.uriEncode($0.name, keepingSlashes: false), Self.uriEncode($0.value, keepingSlashes: false)) }
            .sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// The `name:value\n` lines (names lowercased and sorted, values trimmed with inner runs of spaces made one, repeated
    /// names joined by `,` in order) and the `;`-joined signed header names.
    public static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> (canonical: String, signed: String) {
        var values: [String: [String]] = [:]
        for (name, value) in headers {
            values[name.lowercased(), default: []].append(Self.trimmed(value))
        }
        let names = values.keys.sorted()
        let lines = names.map { "\($0):\(values[$0, default: []].joined(separator: ","))\n" }.joined()
        return (lines, names.joined(separator: ";"))
    }

    /// RFC 3986 percent-encoding of the UTF-8 bytes of `text`: unreserved characters (`A-Z a-z 0-9 - . _ ~`) kept,
    /// `/` kept when `keepingSlashes`, everything else `%XX` (uppercase hex).
    public static func uriEncode(_ text: String, keepingSlashes: Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: "/") where keepingSlashes:
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `value` without leading/trailing white space (spaces, tabs, line breaks) and with each inner run of it made one
    /// space.
    static func trimmed(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).joined(separator: " ")
    }
}
