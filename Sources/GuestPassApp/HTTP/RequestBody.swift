import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension Request {
    /// The body as a JSON object; an empty body is `{}`. Anything else is a 400 in the documented shape.
    mutating func jsonObject(limit: Int = 64 * 1024) async throws -> [String: JSONValue] {
        let buffer: ByteBuffer
        do {
            buffer = try await self.body.collect(upTo: limit)
        } catch {
            throw APIError(.contentTooLarge, code: "request_too_large", message: "The request body is larger than \(limit) bytes")
        }
        if buffer.readableBytes == 0 { return [:] }
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(buffer: buffer))
        } catch {
            throw APIError.badJSON()
        }
        guard let object = value.objectValue else { throw APIError.badJSON("The request body must be a JSON object") }
        return object
    }

    /// The client's IP: from the trusted proxy header when configured (its last entry, the one our proxy added),
    /// else the socket peer.
    func clientIP(context: AppRequestContext, trustedHeader: String?) -> String {
        if let trustedHeader, let name = HTTPField.Name(trustedHeader), let value = self.headers[name] {
            if let last = value.split(separator: ",").last?.trimmingCharacters(in: .whitespaces), !last.isEmpty, last.count <= 64 {
                return last
            }
        }
        return context.remoteAddress?.ipAddress ?? "unknown"
    }
}
