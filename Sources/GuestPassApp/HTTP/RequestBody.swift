import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import GuestPassJSON

extension Request {
    /// The body as a JSON object; an empty body is `{}`. A body over `limit` bytes is a 413 and anything that is not
    /// a JSON object `JSONParser` accepts (NUL, invalid UTF-8, unpaired surrogates, too deep) is a 400, in the
    /// documented shape. Each route passes the limit that fits what it takes.
    mutating func jsonObject(limit: Int) async throws -> [String: JSONValue] {
        let buffer: ByteBuffer
        do {
            buffer = try await self.body.collect(upTo: limit)
        } catch {
            throw APIError(.contentTooLarge, code: GoTrueCode.requestTooLarge, message: "The request body is larger than \(limit) bytes")
        }
        if buffer.readableBytes == 0 { return [:] }
        // Decided by the first byte: anything but an object is refused before it is parsed.
        guard let first = buffer.readableBytesView.first(where: { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }), first == UInt8(ascii: "{") else {
            throw APIError.badJSON("The request body must be a JSON object")
        }
        do {
            guard let object = try JSONParser.parse(buffer.readableBytesView).objectValue else {
                throw APIError.badJSON("The request body must be a JSON object")
            }
            return object
        } catch let failure as JSONParser.Failure {
            throw APIError.badJSON("The request body is not valid JSON: \(failure.description)")
        }
    }

    /// The credential of `Authorization: Bearer …` (nil without one, or for another scheme; the scheme's case does
    /// not matter), without the spaces and tabs around it. Byte work only: this runs on every request.
    var bearerCredential: String? {
        guard let authorization = self.headers[.authorization] else { return nil }
        let bytes = authorization.utf8
        guard bytes.count > 7,
            zip(bytes.prefix(7), "bearer ".utf8).allSatisfy({ byte, expected in
                (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == expected
            })
        else { return nil }
        return authorization.asciiTrimmed(from: bytes.index(bytes.startIndex, offsetBy: 7))
    }

    /// The access token the request carries: the bearer credential, unless it is the API key itself (the SDKs send
    /// the key as the bearer until there is a session).
    var bearerToken: String? {
        guard let credential = self.bearerCredential, credential != self.headers[.apiKey] else { return nil }
        let keysInURL: [String] = self.uri.queryParameters.getAll("apikey")
        return keysInURL.contains(credential) ? nil : credential
    }

    /// The client's IP: from the trusted proxy header when configured (its last entry, the one our proxy added),
    /// else the socket peer.
    func clientIP(context: AppRequestContext, trustedHeader: String?) -> String {
        if let trustedHeader, let name = HTTPField.Name(trustedHeader), let value = self.headers[name] {
            let entries = value.utf8.split(separator: UInt8(ascii: ","))
            if let entry = entries.last, case let last = value.asciiTrimmed(from: entry.startIndex, to: entry.endIndex),
                !last.isEmpty, last.utf8.count <= 64
            {
                return last
            }
        }
        return context.remoteAddress?.ipAddress ?? "unknown"
    }
}

extension String {
    /// The text between `start` and `end` (byte positions of `utf8`) without the ASCII spaces and tabs at either end.
    func asciiTrimmed(from start: String.Index, to end: String.Index? = nil) -> String {
        let bytes = self.utf8
        var lower = start
        var upper = end ?? bytes.endIndex
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while lower < upper, isBlank(bytes[lower]) { lower = bytes.index(after: lower) }
        while upper > lower, isBlank(bytes[bytes.index(before: upper)]) { upper = bytes.index(before: upper) }
        return String(self[lower..<upper])
    }
}
