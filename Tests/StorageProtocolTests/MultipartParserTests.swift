import NIOCore
import StorageProtocol
import XCTest

final class MultipartParserTests: XCTestCase {
    /// A body as supabase-swift sends it: cacheControl, metadata, then the file under an empty field name.
    private func swiftBody(_ content: [UInt8], boundary: String = "alamofire.boundary.0123456789abcdef") -> [UInt8] {
        var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"cacheControl\"\r\n\r\n3600\r\n".utf8)
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{\"a\":1}\r\n".utf8)
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\"; filename=\"cat.png\"\r\nContent-Type: image/png\r\n\r\n".utf8)
        body += content
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        return body
    }

    private struct Parsed: Equatable {
        var fields: [String: [UInt8]] = [:]
        var file: MultipartParser.FilePart?
        var content: [UInt8] = []
        var ended = false
    }

    /// Feeds `body` in chunks of the given sizes (cycled), collecting what the parser answers.
    private func parse(_ body: [UInt8], boundary: String, chunks: [Int]) throws -> Parsed {
        var parser = MultipartParser(boundary: boundary)
        var parsed = Parsed()
        var offset = 0
        var index = 0
        while offset < body.count {
            let size = max(1, chunks[index % chunks.count])
            index += 1
            let end = min(body.count, offset + size)
            for event in try parser.feed(ByteBuffer(bytes: body[offset..<end])) {
                switch event {
                case .field(let name, let value): parsed.fields[name] = value
                case .fileStart(let part): parsed.file = part
                case .fileBytes(var bytes): parsed.content += bytes.readBytes(length: bytes.readableBytes) ?? []
                case .fileEnd: parsed.ended = true
                }
            }
            offset = end
        }
        try parser.finish()
        return parsed
    }

    func testSupabaseSwiftBodyWholeAndByteByByte() throws {
        let content = Array("PNG\r\n--alamofire.boundary.0123456789abcdeX\r\n\r\n-".utf8) + (0..<5000).map { UInt8($0 % 251) }
        let body = self.swiftBody(content)
        let whole = try self.parse(body, boundary: "alamofire.boundary.0123456789abcdef", chunks: [body.count])
        XCTAssertEqual(whole.fields["cacheControl"], Array("3600".utf8))
        XCTAssertEqual(whole.fields["metadata"], Array("{\"a\":1}".utf8))
        XCTAssertEqual(whole.file, MultipartParser.FilePart(fieldName: "", filename: "cat.png", contentType: "image/png"))
        XCTAssertEqual(whole.content, content)
        XCTAssertTrue(whole.ended)
        for chunks in [[1], [2, 3], [7, 1, 64], [1000]] {
            XCTAssertEqual(try self.parse(body, boundary: "alamofire.boundary.0123456789abcdef", chunks: chunks), whole, "chunks \(chunks)")
        }
    }

    func testRandomSplitsAndContentsRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let length = Int.random(in: 0...3000, using: &generator)
            // Bytes rich in CR, LF and dashes, so near-delimiters are common.
            let alphabet: [UInt8] = [13, 10, 45, 98, 0, 255]
            let content = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
            let boundary = "Zq"  // not in the alphabet: a sender picks a boundary its content lacks
            let body = self.swiftBody(content, boundary: boundary)
            let chunks = (0..<5).map { _ in Int.random(in: 1...300, using: &generator) }
            let parsed = try self.parse(body, boundary: boundary, chunks: chunks)
            XCTAssertEqual(parsed.content, content)
        }
    }

    func testTruncatedBodyThrows() throws {
        let body = self.swiftBody(Array(repeating: 7, count: 100))
        for cut in [10, body.count / 2, body.count - 3] {
            XCTAssertThrowsError(try self.parse(Array(body[..<cut]), boundary: "alamofire.boundary.0123456789abcdef", chunks: [9])) {
                XCTAssertEqual($0 as? MultipartParser.Failure, .truncated)
            }
        }
    }

    func testPythonStyleFirstFileWinsAndLaterFilesAreDropped() throws {
        let boundary = "xyz"
        var body = Array(
            "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain;charset=UTF-8\r\n\r\nhello\r\n"
                .utf8)
        body += Array("--xyz\r\nContent-Disposition: form-data; name=\"other\"; filename=\"b.txt\"\r\n\r\nworld\r\n--xyz--".utf8)
        let parsed = try self.parse(body, boundary: boundary, chunks: [3])
        XCTAssertEqual(parsed.file?.fieldName, "file")
        XCTAssertEqual(parsed.file?.contentType, "text/plain;charset=UTF-8")
        XCTAssertEqual(parsed.content, Array("hello".utf8))
    }

    func testMalformedAndOversizedBodiesThrowNotCrash() {
        let headerFlood = Array("--b\r\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 20_000)
        XCTAssertThrowsError(try self.parse(headerFlood, boundary: "b", chunks: [4096]))
        let noDisposition = Array("--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--".utf8)
        XCTAssertThrowsError(try self.parse(noDisposition, boundary: "b", chunks: [5]))
        let badAfterBoundary = Array("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--bXY".utf8)
        XCTAssertThrowsError(try self.parse(badAfterBoundary, boundary: "b", chunks: [5]))
        // Random garbage: any outcome but a crash.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let garbage = (0..<Int.random(in: 0...400, using: &generator)).map { _ in
                [13, 10, 45, 98, 34, 59, 61, 58, 120].randomElement(using: &generator)! as UInt8
            }
            _ = try? self.parse(Array("--b\r\n".utf8) + garbage, boundary: "b", chunks: [Int.random(in: 1...50, using: &generator)])
        }
    }

    func testBoundaryFromContentType() {
        XCTAssertEqual(MultipartParser.boundary(contentType: "multipart/form-data; boundary=abc"), "abc")
        XCTAssertEqual(MultipartParser.boundary(contentType: "Multipart/Form-Data;boundary=\"a b\""), "a b")
        XCTAssertNil(MultipartParser.boundary(contentType: "application/json"))
        XCTAssertNil(MultipartParser.boundary(contentType: "multipart/form-data"))
        XCTAssertNil(MultipartParser.boundary(contentType: "multipart/form-data; boundary=" + String(repeating: "a", count: 71)))
    }
}
