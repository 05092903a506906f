/// A template that cannot be used: it does not parse as mustache, names a variable that does not exist, or leaves
/// the subject or the text body empty. Operators write templates, so the error says where: the part, and for a syntax
/// error the line and column (1-based) in that part.
public struct MailTemplateError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The part of the template at fault.
    public enum Part: String, Sendable, Hashable {
        case subject, text, html
    }

    public enum Problem: Hashable, Sendable {
        /// The mustache parser's reason, e.g. `sectionCloseNameIncorrect`.
        case syntax(String)
        /// A `{{ name }}` that is not one of `MailTemplateVariables.names`.
        case unknownVariable(String)
        /// The part renders to nothing but white space.
        case empty
    }

    public let part: Part
    public let problem: Problem
    public let line: Int?
    public let column: Int?

    init(_ part: Part, _ problem: Problem, line: Int? = nil, column: Int? = nil) {
        self.part = part
        self.problem = problem
        self.line = line
        self.column = column
    }

    public var description: String {
        let place = self.line.map { line in " at line \(line), column \(self.column ?? 0)" } ?? ""
        switch self.problem {
        case .syntax(let reason):
            return "the \(self.part) template does not parse\(place): \(reason)"
        case .unknownVariable(let name):
            let known = MailTemplateVariables.names.sorted().joined(separator: ", ")
            return "the \(self.part) template uses {{\(name)}}, which is not one of \(known)"
        case .empty:
            return "the \(self.part) template is empty"
        }
    }
}
