import AsyncHTTPClient
import GuestPassCrypto
import Logging
import NIOCore
import NIOHTTP1

/// Building, signing and sending one S3 request; reading its status and error answer.
extension S3Backend {
    /// One request: the operation's name (for errors and logs), method, key (nil: the bucket itself), decoded query,
    /// extra headers to sign and send, and body.
    struct Call {
        var operation: String
        var method: HTTPMethod
        var key: String?
        var query: [(name: String, value: String)] = []
        var headers: [(name: String, value: String)] = []
        var body: ByteBuffer?
        /// The body's hex SHA-256; computed from `body` when nil.
        var payloadHash: String?
    }

    /// The decoded path of `key` (or of the bucket): `/<bucket>/<key>`.
    func path(of key: String?) -> String {
        key.map { "/\(self.configuration.bucket)/\($0)" } ?? "/\(self.configuration.bucket)"
    }

    /// Signs and sends `call`; network failures become `.unavailable("<operation>: <reason>")`.
    func send(_ call: Call) async throws -> HTTPClientResponse {
        let timestamp = SigV4Timestamp.now()
        let payloadHash = call.payloadHash ?? call.body.map(Self.sha256Hex) ?? SigV4Signer.emptyPayloadHash
        let path = self.path(of: call.key)
        var signed: [(name: String, value: String)] = [
            ("host", self.configuration.host), ("x-amz-date", timestamp.amzDate), ("x-amz-content-sha256", payloadHash),
        ]
        signed += call.headers
        let signingRequest = SigV4Signer.Request(
            method: call.method.rawValue, path: path, query: call.query, headers: signed, payloadHash: payloadHash)
        let authorization = self.signer.authorization(for: signingRequest, timestamp: timestamp)

        var url = self.configuration.endpoint + SigV4Signer.uriEncode(path, keepingSlashes: true)
        if !call.query.isEmpty { url += "?" + SigV4Signer.canonicalQuery(call.query) }
        var request = HTTPClientRequest(url: url)
        request.method = call.method
        for (name, value) in signed { request.headers.add(name: name, value: value) }
        request.headers.add(name: "authorization", value: authorization)
        if let body = call.body { request.body = .bytes(body) }
        do {
            return try await self.client.execute(request, deadline: .now() + self.requestTimeout, logger: self.logger)
        } catch let error as CancellationError {
            throw error
        } catch {
            throw ObjectBackendError.unavailable("\(call.operation): \(Self.reason(error))")
        }
    }

    /// The error for a status the operation did not expect: `<operation> <status> <S3 code>` (the `<Message>` goes to
    /// the debug log only). Reads at most 64 KiB of the answer.
    func failure(_ operation: String, _ response: HTTPClientResponse) async -> ObjectBackendError {
        let document = await Self.text(of: response, upTo: 64 << 10) ?? ""
        let code = S3XML.value(of: "Code", in: document).map(Self.sanitized) ?? ""
        self.logger.debug(
            "S3 request refused",
            metadata: [
                "operation": "\(operation)", "status": "\(response.status.code)", "code": "\(code)",
                "message": "\(Self.sanitized(S3XML.value(of: "Message", in: document) ?? ""))",
            ])
        return .unavailable(code.isEmpty ? "\(operation) \(response.status.code)" : "\(operation) \(response.status.code) \(code)")
    }

    /// Reads the answer's body (at most `limit` bytes) as text; nil when it is larger or cut.
    static func text(of response: HTTPClientResponse, upTo limit: Int) async -> String? {
        guard let buffer = try? await response.body.collect(upTo: limit) else { return nil }
        return String(buffer: buffer)
    }

    /// Reads and drops the rest of an answer's body, so the connection goes back to the pool.
    static func drain(_ response: HTTPClientResponse) async {
        do {
            for try await _ in response.body {}
        } catch {
            // The connection is closed instead; nothing else to do.
        }
    }

    static func sha256Hex(_ buffer: ByteBuffer) -> String {
        var hasher = SHA256Hasher()
        buffer.withUnsafeReadableBytes { hasher.update($0) }
        return hasher.finalizeHex()
    }

    /// A short, credential-free reason for a transport error (AsyncHTTPClient and NIO errors name the failure and at
    /// most the host; requests carry credentials only in headers, which errors do not echo).
    static func reason(_ error: any Error) -> String {
        if let error = error as? ObjectBackendError, case .unavailable(let reason) = error { return reason }
        return Self.sanitized(String(describing: error))
    }

    /// At most 200 printable ASCII characters of `text`.
    static func sanitized(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7f }.prefix(200)))
    }
}
