import StorageProtocol
import XCTest

final class StorageErrorCodeTests: XCTestCase {
    func testCodesAreSupabaseStorageNames() {
        XCTAssertEqual(StorageErrorCode.noSuchKey.rawValue, "NoSuchKey")
        XCTAssertEqual(StorageErrorCode.entityTooLarge.rawValue, "EntityTooLarge")
    }
}
