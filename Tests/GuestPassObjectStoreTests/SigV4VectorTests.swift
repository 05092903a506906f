import Foundation
import GuestPassCrypto
import Testing

@testable import GuestPassObjectStore

/// One case of AWS's SigV4 test suite (`Vectors/sigv4/<name>/`, from awslabs/aws-c-auth; see its README).
struct SigV4Vector: CustomTestStringConvertible, Sendable {
    let name: String
    let method: String
    let path: String
    let query: [(name: String, value: String)]
    let headers: [(name: String, value: String)]
    let body: [UInt8]
    let accessKeyID: String
    let secretAccessKey: String
    let region: String
    let service: String
    let normalize: Bool
    let signBody: Bool
    let timestamp: SigV4Timestamp
    let canonicalRequest: String
    let stringToSign: String
    let signature: String

    var testDescription: String { self.name }

    static let directory = Bundle.module.resourceURL!.appendingPathComponent("Vectors/sigv4")

    /// Every case directory, sorted.
    static func all() throws -> [SigV4Vector] {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path).filter {
            FileManager.default.fileExists(atPath: Self.directory.appendingPathComponent($0).appendingPathComponent("request.txt").path)
        }
        return try names.sorted().map(Self.init(name:))
    }

    init(name: String) throws {
        let folder = Self.directory.appendingPathComponent(name)
        func text(_ file: String) throws -> String {
            String(decoding: try Data(contentsOf: folder.appendingPathComponent(file)), as: UTF8.self)
        }
        self.name = name
        // request.txt: "METHOD PATH[?QUERY] HTTP/1.1", header lines (a line starting with white space continues the
        // previous value), an empty line, the body.
        let request = try text("request.txt")
        let (head, body) =
            request.range(of: "\n\n").map { (String(request[..<$0.lowerBound]), String(request[$0.upperBound...])) } ?? (request, "")
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let requestLine = lines.removeFirst()
        let firstSpace = try #require(requestLine.firstIndex(of: " "))
        self.method = String(requestLine[..<firstSpace])
        let target = String(requestLine[requestLine.index(after: firstSpace)...].dropLast(" HTTP/1.1".count))
        let (path, query) = target.firstIndex(of: "?").map { (String(target[..<$0]), String(target[target.index(after: $0)...])) } ?? (target, "")
        self.path = path
        self.query = query.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in text.removingPercentEncoding ?? String(text) }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            if line.first == " " || line.first == "\t", let last = headers.popLast() {
                headers.append((last.name, last.value + " " + line.trimmingCharacters(in: .whitespaces)))
            } else {
                let colon = try #require(line.firstIndex(of: ":"))
                headers.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
            }
        }
        self.headers = headers
        self.body = Array(body.utf8)

        let context = try #require(JSONSerialization.jsonObject(with: Data(try text("context.json").utf8)) as? [String: Any])
        let credentials = try #require(context["credentials"] as? [String: Any])
        self.accessKeyID = try #require(credentials["access_key_id"] as? String)
        self.secretAccessKey = try #require(credentials["secret_access_key"] as? String)
        self.region = try #require(context["region"] as? String)
        self.service = try #require(context["service"] as? String)
        self.normalize = try #require(context["normalize"] as? Bool)
        self.signBody = context["sign_body"] as? Bool ?? false
        let iso = try #require(context["timestamp"] as? String)  // 2015-08-30T12:36:00Z
        self.timestamp = try #require(SigV4Timestamp(amzDate: iso.replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "")))
        self.canonicalRequest = try text("header-canonical-request.txt")
        self.stringToSign = try text("header-string-to-sign.txt")
        self.signature = try text("header-signature.txt").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var signer: SigV4Signer {
        SigV4Signer(accessKeyID: self.accessKeyID, secretAccessKey: self.secretAccessKey, region: self.region, service: self.service)
    }

    /// The request as signed: its headers plus `x-amz-date` (and `x-amz-content-sha256` when the body is signed).
    var signingRequest: SigV4Signer.Request {
        let payloadHash = Digest.sha256Hex(self.body)
        var headers = self.headers + [("X-Amz-Date", self.timestamp.amzDate)]
        if self.signBody { headers.append(("x-amz-content-sha256", payloadHash)) }
        return SigV4Signer.Request(method: self.method, path: self.path, query: self.query, headers: headers, payloadHash: payloadHash)
    }
}

@Suite struct SigV4VectorTests {
    static let vectors: [SigV4Vector] = (try? SigV4Vector.all()) ?? []

    @Test func theSuiteIsThere() {
        #expect(Self.vectors.count >= 30, "Vectors/sigv4 holds \(Self.vectors.count) cases")
    }

    @Test(arguments: Self.vectors) func canonicalRequestStringToSignAndSignature(_ vector: SigV4Vector) {
        let canonical = SigV4Signer.canonicalRequest(vector.signingRequest, normalizePath: vector.normalize)
        #expect(canonical == vector.canonicalRequest)
        let stringToSign = vector.signer.stringToSign(canonicalRequest: canonical, timestamp: vector.timestamp)
        #expect(stringToSign == vector.stringToSign)
        #expect(vector.signer.signature(stringToSign: stringToSign, timestamp: vector.timestamp) == vector.signature)
    }

    /// The `Authorization` header of get-vanilla, as in its `header-signed-request.txt`.
    @Test func authorizationHeaderOfGetVanilla() throws {
        let vector = try SigV4Vector(name: "get-vanilla")
        #expect(
            vector.signer.authorization(for: vector.signingRequest, timestamp: vector.timestamp, normalizePath: true)
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, "
                + "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
    }

    /// The "GET Object" example of AWS's S3 SigV4 documentation (Authenticating Requests: Using the Authorization Header).
    @Test func s3DocumentationGetObjectExample() throws {
        let signer = SigV4Signer(
            accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1")
        let timestamp = try #require(SigV4Timestamp(amzDate: "20130524T000000Z"))
        let request = SigV4Signer.Request(
            method: "GET", path: "/test.txt",
            headers: [
                ("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
                ("x-amz-content-sha256", SigV4Signer.emptyPayloadHash), ("x-amz-date", "20130524T000000Z"),
            ],
            payloadHash: SigV4Signer.emptyPayloadHash)
        let canonical = SigV4Signer.canonicalRequest(request)
        #expect(
            canonical == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        let stringToSign = signer.stringToSign(canonicalRequest: canonical, timestamp: timestamp)
        #expect(
            stringToSign == """
                AWS4-HMAC-SHA256
                20130524T000000Z
                20130524/us-east-1/s3/aws4_request
                7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
                """)
        #expect(
            signer.signature(stringToSign: stringToSign, timestamp: timestamp)
                == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test func uriEncodingKeepsUnreservedAndEncodesTheRest() {
        #expect(SigV4Signer.uriEncode("a-Z_0.~/b c+é", keepingSlashes: true) == "a-Z_0.~/b%20c%2B%C3%A9")
        #expect(SigV4Signer.uriEncode("a/b", keepingSlashes: false) == "a%2Fb")
        // S3 paths are encoded once, without normalisation: "a//b/./c" is a key of its own.
        #expect(SigV4Signer.canonicalURI("/bucket/a//b/./c", normalize: false) == "/bucket/a//b/./c")
    }

    @Test func timestampsAreUTCAndChecked() {
        #expect(SigV4Timestamp(secondsSince1970: 1_440_938_160).amzDate == "20150830T123600Z")
        #expect(SigV4Timestamp(secondsSince1970: 0).dateStamp == "19700101")
        #expect(SigV4Timestamp(amzDate: "2015-08-30T12:36:00Z") == nil)
        #expect(SigV4Timestamp(amzDate: "20150830T123600") == nil)
    }

    @Test func theSecretIsNeverPrinted() throws {
        let secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
        let signer = SigV4Signer(accessKeyID: "AKID", secretAccessKey: secret, region: "us-east-1")
        let configuration = try S3Configuration(endpoint: "http://127.0.0.1:8333", bucket: "bucket", accessKeyID: "AKID", secretAccessKey: secret)
        for text in [
            String(describing: signer), String(reflecting: signer), String(describing: configuration), String(reflecting: configuration),
        ] {
            #expect(!text.contains(secret), "\(text)")
        }
        var dumped = ""
        dump(configuration, to: &dumped)
        dump(signer, to: &dumped)
        #expect(!dumped.contains(secret))
    }
}
