import Foundation
import NIOCore
import Testing

@testable import GuestPassApp

/// The version has one home (`GuestPassVersion.number`); the served OpenAPI document carries it as `info.version`.
@Suite struct VersionTests {
    @Test func theOpenAPIDocumentCarriesTheVersion() throws {
        let bytes = try OpenAPIDocument.bundled.get()
        let document = try #require(try JSONSerialization.jsonObject(with: Data(bytes.readableBytesView)) as? [String: Any])
        let info = try #require(document["info"] as? [String: Any])
        #expect(info["version"] as? String == GuestPassVersion.number)
    }
}
