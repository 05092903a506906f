import GuestPassObjectStore
import XCTest

final class ObjectBackendErrorTests: XCTestCase {
    func testTooLargeCarriesTheLimit() {
        XCTAssertEqual(ObjectBackendError.tooLarge(limit: 5), .tooLarge(limit: 5))
        XCTAssertNotEqual(ObjectBackendError.tooLarge(limit: 5), .notFound)
    }
}
