import Mustache

/// Renders and checks mail templates (swift-mustache).
///
/// **Design.** The subject and the text body are mustache templates rendered without escaping (the
/// `{{% CONTENT_TYPE: TEXT }}` pragma is put in front of them); the HTML body is rendered with mustache's HTML
/// escaping. The rendered subject is made one line: control characters and line breaks become spaces, and it is cut
/// to 900 characters, so any rendered subject is a valid `MailMessage` subject. The built-in templates are parsed
/// once; a custom template is parsed on each render (a few microseconds), so it should be checked with `validate` when
/// it is configured.
public enum MailTemplates {
    /// The built-in template for `kind`.
    public static func defaultTemplate(for kind: MailTemplateKind) -> MailTemplate {
        DefaultMailTemplates.template(for: kind)
    }

    /// The subject and bodies of a mail of `kind`: from `template`, or from the built-in template when it is nil.
    public static func render(
        kind: MailTemplateKind,
        template: MailTemplate?,
        variables: MailTemplateVariables
    ) throws(MailTemplateError) -> (subject: String, text: String, html: String?) {
        let compiled: CompiledTemplate
        if let template {
            compiled = try CompiledTemplate(template)
        } else {
            compiled = Self.defaults[kind]!
        }
        let values = variables.byName
        let subject = compiled.subject.render(values)
        return (
            subject: Self.oneLine(subject),
            text: compiled.text.render(values),
            html: compiled.html?.render(values)
        )
    }

    /// Throws unless `template` parses, names only `MailTemplateVariables.names`, and has a subject and a text body
    /// that are not blank. For operators' templates, when they are configured (the CLI's check).
    public static func validate(_ template: MailTemplate) throws(MailTemplateError) {
        let compiled = try CompiledTemplate(template)
        for (part, source, parsed) in [
            (MailTemplateError.Part.subject, template.subject, compiled.subject),
            (.text, template.text, compiled.text),
        ] {
            guard !source.allSatisfy(\.isWhitespace) else { throw MailTemplateError(part, .empty) }
            try Self.checkVariables(parsed, part: part)
        }
        if let html = compiled.html { try Self.checkVariables(html, part: .html) }
    }

    /// The built-in templates, parsed once.
    private static let defaults: [MailTemplateKind: CompiledTemplate] = {
        var defaults: [MailTemplateKind: CompiledTemplate] = [:]
        for kind in MailTemplateKind.allCases {
            do {
                defaults[kind] = try CompiledTemplate(DefaultMailTemplates.template(for: kind))
            } catch {
                preconditionFailure("the built-in \(kind) template does not parse: \(error)")
            }
        }
        return defaults
    }()

    /// Renders `template` against a recorder that answers a sample for every known name and notes the others.
    private static func checkVariables(_ template: MustacheTemplate, part: MailTemplateError.Part) throws(MailTemplateError) {
        let recorder = VariableRecorder()
        _ = template.render(recorder)
        if let unknown = recorder.unknown.first { throw MailTemplateError(part, .unknownVariable(unknown)) }
    }

    /// `text` with control characters and line breaks made spaces, trimmed, at most 900 characters.
    static func oneLine(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            scalars.append(isControlOrLineBreak(scalar) ? " " : scalar)
        }
        let line = String(scalars).trimmingWhitespace()
        return line.count <= 900 ? line : String(line.prefix(900))
    }
}

/// A template's three parts, parsed.
private struct CompiledTemplate: Sendable {
    static let textPragma = "{{% CONTENT_TYPE: TEXT }}"

    let subject: MustacheTemplate
    let text: MustacheTemplate
    let html: MustacheTemplate?

    init(_ template: MailTemplate) throws(MailTemplateError) {
        self.subject = try Self.parse(template.subject, part: .subject, plainText: true)
        self.text = try Self.parse(template.text, part: .text, plainText: true)
        self.html = try template.html.map { html throws(MailTemplateError) in try Self.parse(html, part: .html, plainText: false) }
    }

    private static func parse(_ source: String, part: MailTemplateError.Part, plainText: Bool) throws(MailTemplateError) -> MustacheTemplate {
        do {
            return try MustacheTemplate(string: plainText ? Self.textPragma + source : source)
        } catch let error as MustacheTemplate.ParserError {
            let line = error.context.lineNumber
            // The pragma put in front of a plain-text part shifts the columns of its first line.
            let shift = plainText && line == 1 ? Self.textPragma.count : 0
            throw MailTemplateError(part, .syntax("\(error.error)"), line: line, column: max(1, error.context.columnNumber - shift))
        } catch {
            throw MailTemplateError(part, .syntax("\(error)"))
        }
    }
}

/// Stands in for the variables while a template is checked: answers a sample value for every known name and keeps
/// the others, in the order the template asks for them.
private final class VariableRecorder: MustacheParent {
    private(set) var unknown: [String] = []

    func child(named name: String) -> Any? {
        guard MailTemplateVariables.names.contains(name) else {
            self.unknown.append(name)
            return nil
        }
        return "sample"
    }
}

extension String {
    /// `self` without leading and trailing white space.
    fileprivate func trimmingWhitespace() -> String {
        guard let first = self.firstIndex(where: { !$0.isWhitespace }), let last = self.lastIndex(where: { !$0.isWhitespace }) else {
            return ""
        }
        return String(self[first...last])
    }
}
