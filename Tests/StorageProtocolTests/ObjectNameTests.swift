import StorageProtocol
import XCTest

final class ObjectNameTests: XCTestCase {
    func testKeysSupabaseAcceptsPass() throws {
        for key in ["a.png", "user/1/photo (1).jpg", "x!*'()&$=@;:+,?-_", "a/b/c"] {
            XCTAssertEqual(try ObjectName.key(key), key)
        }
    }

    func testRefusedKeys() {
        for key in [
            "", "/abs", "a//b", "a/", "../etc/passwd", "a/../b", "./a", "a\u{0}b", "café.png", "日本.png", "a\\b", "a#b", "a%2e",
            String(repeating: "a", count: 1025),
        ] {
            XCTAssertThrowsError(try ObjectName.key(key), key) { XCTAssertEqual($0 as? ObjectName.Refusal, .invalidKey(key)) }
        }
        XCTAssertNoThrow(try ObjectName.key(String(repeating: "a", count: 1024)))
    }

    func testBucketNames() {
        XCTAssertNoThrow(try ObjectName.bucket("photos"))
        for name in ["", "a/b", "..", String(repeating: "b", count: 101), "é"] {
            XCTAssertThrowsError(try ObjectName.bucket(name), name)
        }
    }

    func testFolderPrefix() throws {
        XCTAssertEqual(try ObjectName.folder(""), "")
        XCTAssertEqual(try ObjectName.folder("/"), "")
        XCTAssertEqual(try ObjectName.folder("a/b"), "a/b/")
        XCTAssertEqual(try ObjectName.folder("/a/b/"), "a/b/")
        XCTAssertThrowsError(try ObjectName.folder("a/../b"))
    }

    func testRanges() {
        XCTAssertEqual(ByteRange.resolve(nil, size: 10), .whole)
        XCTAssertEqual(ByteRange.resolve("bytes=0-4", size: 10), .partial(0...4))
        XCTAssertEqual(ByteRange.resolve("bytes=5-", size: 10), .partial(5...9))
        XCTAssertEqual(ByteRange.resolve("bytes=-3", size: 10), .partial(7...9))
        XCTAssertEqual(ByteRange.resolve("bytes=-30", size: 10), .partial(0...9))
        XCTAssertEqual(ByteRange.resolve("bytes=8-100", size: 10), .partial(8...9))
        XCTAssertEqual(ByteRange.resolve("bytes=10-", size: 10), .unsatisfiable)
        XCTAssertEqual(ByteRange.resolve("bytes=0-1,3-4", size: 10), .whole)
        XCTAssertEqual(ByteRange.resolve("bytes=5-2", size: 10), .whole)
        XCTAssertEqual(ByteRange.resolve("items=0-1", size: 10), .whole)
        XCTAssertEqual(ByteRange.resolve("bytes=x-1", size: 10), .whole)
    }

    func testSizeText() {
        XCTAssertEqual(SizeText.bytes("1kb"), 1024)
        XCTAssertEqual(SizeText.bytes("10 MB"), 10 << 20)
        XCTAssertEqual(SizeText.bytes("2GB"), 2 << 30)
        XCTAssertEqual(SizeText.bytes("123"), 123)
        XCTAssertNil(SizeText.bytes("1.5mb"))
        XCTAssertNil(SizeText.bytes("-1"))
        XCTAssertNil(SizeText.bytes("99999999999999999tb"))
    }
}
