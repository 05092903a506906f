import Foundation
import GuestPassJSON
import Hummingbird
import Mustache
import NIOCore

/// The console's pages: swift-mustache templates bundled with the module (`Console/Templates`), rendered on the server.
///
/// `{{name}}` escapes for HTML, so nothing a user, an app or an operator typed can add markup; the only unescaped
/// value is a chart's SVG (`{{{svg}}}`), which `SVGChart` writes itself, escaping its text. Views are plain
/// dictionaries made from the store's JSON (`ConsoleView.value(of:)`): SQL's snake_case keys are the templates' names.
struct ConsolePages: Sendable {
    let library: MustacheLibrary
    let stylesheet: ByteBuffer

    /// The bundled templates and stylesheet; a template that does not parse stops the server at start.
    static func bundled() throws -> ConsolePages {
        guard let directory = Bundle.module.url(forResource: "Templates", withExtension: nil),
            let stylesheet = Bundle.module.url(forResource: "console", withExtension: "css")
        else { throw ConsoleSetupError("the console's templates are missing from the GuestPassApp bundle") }
        var templates: [String: MustacheTemplate] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".mustache") {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            templates[String(file.dropLast(".mustache".count))] = try MustacheTemplate(string: text)
        }
        return ConsolePages(library: MustacheLibrary(templates: templates), stylesheet: ByteBuffer(bytes: try Data(contentsOf: stylesheet)))
    }

    /// `template` rendered with `view`, or nil when there is no such template.
    func render(_ template: String, _ view: [String: Any]) -> String? {
        self.library.render(view, withTemplate: template)
    }

    /// `template` rendered with `view` as an HTML response (`status`), with the console's headers added by
    /// `ConsoleHeadersMiddleware`.
    func page(_ template: String, _ view: [String: Any], status: HTTPResponse.Status = .ok) -> Response {
        let html = self.render(template, view) ?? "<!doctype html><title>GuestPass console</title><p>Page missing.</p>"
        return Response(status: status, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// The error page: `heading` and `message` (both escaped), for a refused or failed request.
    func problem(_ status: HTTPResponse.Status, heading: String, message: String, base: [String: Any]) -> Response {
        var view = base
        view["heading"] = heading
        view["message"] = message
        return self.page("error", view, status: status)
    }
}

/// The console could not be set up (its resources, its settings).
struct ConsoleSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Turns the store's JSON into what the templates read: objects as dictionaries without their null members (so
/// `{{^x}}` reads "absent"), arrays as arrays, numbers as their text, booleans as booleans.
enum ConsoleView {
    /// `value` for a template.
    static func value(of value: JSONValue) -> Any {
        switch value {
        case .null: return ""
        case .bool(let flag): return flag
        case .number(let number): return number.text
        case .string(let text): return text
        case .array(let items): return items.map { Self.value(of: $0) }
        case .object(let members):
            var dictionary: [String: Any] = [:]
            for (key, member) in members where member != .null { dictionary[key] = Self.value(of: member) }
            return dictionary
        }
    }

    /// A dictionary view of `json` (an empty one when it is not an object).
    static func object(of json: JSONValue) -> [String: Any] {
        Self.value(of: json) as? [String: Any] ?? [:]
    }

    /// A list view of `json` (empty when it is not an array).
    static func list(of json: JSONValue) -> [Any] {
        Self.value(of: json) as? [Any] ?? []
    }
}
