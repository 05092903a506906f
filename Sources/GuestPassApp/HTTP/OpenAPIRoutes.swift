import Foundation
import Hummingbird
public import NIOCore
import NIOFoundationEssentialsCompat

/// `GET /openapi.json`: the OpenAPI 3.1 document of every route and error shape, kept beside the code
/// (`HTTP/openapi.json`, a SwiftPM resource of this module) and served as it is. No API key is needed.
struct OpenAPIRoutes: Sendable {
    func register(on router: Router<AppRequestContext>) {
        router.get("openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: try OpenAPIDocument.bundled.get())
            )
        }
    }
}

/// The bundled OpenAPI document, read once per process.
public enum OpenAPIDocument {
    /// The document's bytes, or why they could not be read (a binary shipped without its resource bundle).
    /// `buildApplication` reads it first, so such a binary fails at start-up instead of on the first request.
    /// `info.version` is written in from `GuestPassVersion.number` (the file holds `versionPlaceholder`), so the
    /// version has one home.
    public static let bundled: Result<ByteBuffer, any Error> = Result {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json") else {
            throw OpenAPIDocumentMissing()
        }
        var document = try Data(contentsOf: url)
        guard let placeholder = document.range(of: Data(Self.versionPlaceholder.utf8)) else { throw VersionPlaceholderMissing() }
        document.replaceSubrange(placeholder, with: Data("\"\(GuestPassVersion.number)\"".utf8))
        return ByteBuffer(data: document)
    }

    /// What `HTTP/openapi.json` holds as `info.version`, quotes included: the name of the version's home.
    static let versionPlaceholder = "\"GuestPassVersion.number\""

    /// The resource bundle has no `openapi.json`.
    public struct OpenAPIDocumentMissing: Error, CustomStringConvertible {
        public var description: String { "openapi.json is missing from the GuestPassApp resource bundle" }
    }

    /// The bundled `openapi.json` has no `versionPlaceholder` to write the version over.
    public struct VersionPlaceholderMissing: Error, CustomStringConvertible {
        public var description: String {
            "openapi.json in the GuestPassApp resource bundle has no \(OpenAPIDocument.versionPlaceholder) for info.version"
        }
    }
}
