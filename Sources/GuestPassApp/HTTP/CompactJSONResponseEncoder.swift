import GuestPassCrypto
public import Hummingbird
import NIOCore

/// Every route's response encoder: `CompactJSONEncoder` (several times cheaper than `JSONEncoder` on the session
/// responses of sign-up and refresh), with Hummingbird's JSON headers.
public struct CompactJSONResponseEncoder: ResponseEncoder {
    public init() {}

    public func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws -> Response {
        let bytes = try CompactJSONEncoder().encode(value)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8", .contentLength: String(bytes.count)],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }
}
