import Foundation
import Testing

/// SQL text lives in GuestPassStore, never in the HTTP layer: no string literal of any file under
/// `Sources/GuestPassApp` holds a SQL statement. Routes call the store's typed methods; a statement written in a route
/// fails here, with its file and line.
///
/// What counts as a statement: `SELECT`, `INSERT INTO`, `UPDATE … SET`, `DELETE FROM`, `WITH … AS (`, `LISTEN`,
/// `NOTIFY` in upper case anywhere in a literal (the house style for SQL), or in any case at the start of one, and a
/// literal that is a transaction statement (`BEGIN READ ONLY`, `COMMIT`).
/// Comments are not literals; "GET, HEAD, POST, PATCH, DELETE" and a bare "UPDATE" are words, not statements.
@Suite struct SQLPlacementTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func noRouteFileHoldsSQL() throws {
        let found = try Self.statements(under: "Sources/GuestPassApp")
        #expect(found.files > 20, "the scan reads GuestPassApp's Swift files")
        #expect(found.statements.isEmpty, "SQL belongs in Sources/GuestPassStore: \(found.statements.joined(separator: "; "))")
    }

    /// The detector finds what it is for: the store's statements, and statements planted in each form.
    @Test func theDetectorFindsSQL() throws {
        #expect(try Self.statements(under: "Sources/GuestPassStore").statements.count > 30)
        let planted = [
            #"let a = "SELECT 1""#, #"x("INSERT INTO t (a) VALUES ($1)")"#, #"let s = "UPDATE guestpass.apps SET \(sets) WHERE id = $1""#,
            #"let d = "DELETE FROM \(table)""#, "let q = \"\"\"\n    WITH s AS (SELECT 1) SELECT * FROM s\n    \"\"\"",
            #"try c.execute("LISTEN \(Self.channel)")"#, #"let n = "NOTIFY pgrst""#, #"PostgresStatement("BEGIN READ ONLY")"#,
            #"PostgresStatement("COMMIT")"#, #"let l = "select * from t""#,
            ##"let r = #"SELECT "quoted""#"##, #"f("\(g("x")) SELECT 1")"#,
        ]
        for source in planted { #expect(Self.statements(in: source).count == 1, "\(source)") }
        let words = [
            #"headers: [.allow: "GET, HEAD, POST, PATCH, DELETE"]"#, #"verb: "UPDATE""#, #"// SELECT 1 in a comment"#,
            #"message: "\(verb) requires a WHERE clause""#, #"return "select""#, #"/* INSERT INTO t */ let a = 1"#,
            #"hint: "Verify that it is included in the 'select' query parameter""#,
        ]
        for source in words { #expect(Self.statements(in: source).isEmpty, "\(source)") }
    }

    /// Every SQL statement in a string literal of the Swift files under `directory` (relative to the package), as
    /// `path:line: text`.
    static func statements(under directory: String) throws -> (files: Int, statements: [String]) {
        let base = self.root.appendingPathComponent(directory)
        guard let paths = FileManager.default.enumerator(atPath: base.path) else { return (0, []) }
        var files = 0
        var found: [String] = []
        for case let path as String in paths where path.hasSuffix(".swift") {
            files += 1
            let text = try String(contentsOf: base.appendingPathComponent(path), encoding: .utf8)
            found += self.statements(in: text).map { "\(directory)/\(path):\($0.line): \($0.text)" }
        }
        return (files, found)
    }

    static var anywhere: Regex<AnyRegexOutput> {
        try! Regex(
            #"\b(SELECT\s+\S|INSERT\s+INTO\b|UPDATE\s+\S+\s+SET\b|DELETE\s+FROM\b|WITH\s+\S+\s+AS\s*\(|LISTEN\s+\S|NOTIFY\s+\S)"#)
    }
    static var atStart: Regex<AnyRegexOutput> {
        try! Regex(
            #"^\s*(select\s+\S+(\s+|\s*\().*|insert\s+into\b|update\s+\S+\s+set\b|delete\s+from\b|with\s+\S+\s+as\s*\(|listen\s+\S|notify\s+\S|(begin|commit|rollback)\b(\s+(read|isolation|transaction|work)\b.*)?\s*;?\s*$)"#
        ).ignoresCase()
    }

    /// The SQL statements among the string literals of `source`.
    static func statements(in source: String) -> [(line: Int, text: String)] {
        self.literals(in: source).filter { literal in
            literal.text.contains(self.anywhere) || literal.text.prefixMatch(of: self.atStart) != nil
        }
    }

    /// The string literals of Swift `source` (plain, multi-line and raw), each with the line it starts on; an
    /// interpolation's own literals are literals too, and its code stands as `(…)` in the outer text. Comments are skipped.
    static func literals(in source: String) -> [(line: Int, text: String)] {
        var scanner = LiteralScanner(Array(source.unicodeScalars))
        scanner.code(until: nil)
        return scanner.found
    }
}

/// A small lexer for `SQLPlacementTests.literals(in:)`: enough of Swift's string and comment syntax to find literals.
private struct LiteralScanner {
    let scalars: [Unicode.Scalar]
    var index = 0
    var line = 1
    var found: [(line: Int, text: String)] = []

    init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

    func peek(_ offset: Int = 0) -> Unicode.Scalar? { index + offset < scalars.count ? scalars[index + offset] : nil }

    mutating func advance() {
        if scalars[index] == "\n" { line += 1 }
        index += 1
    }

    func starts(with text: String) -> Bool {
        Array(text.unicodeScalars).enumerated().allSatisfy { peek($0.offset) == $0.element }
    }

    /// Code until the `)` closing an interpolation (`until` ")"), or the end.
    mutating func code(until closing: Unicode.Scalar?) {
        var depth = 0
        while let scalar = peek() {
            if starts(with: "//") {
                while let next = peek(), next != "\n" { advance() }
            } else if starts(with: "/*") {
                while peek() != nil, !starts(with: "*/") { advance() }
                if peek() != nil {
                    advance()
                    advance()
                }
            } else if scalar == "#" || scalar == "\"" {
                var hashes = 0
                while peek(hashes) == "#" { hashes += 1 }
                guard peek(hashes) == "\"" else {
                    advance()
                    continue
                }
                for _ in 0..<hashes { advance() }
                literal(hashes: hashes)
            } else if scalar == "(" {
                depth += 1
                advance()
            } else if scalar == ")" {
                if depth == 0, closing != nil {
                    advance()
                    return
                }
                depth -= 1
                advance()
            } else {
                advance()
            }
        }
    }

    /// One literal, at its opening quote(s), preceded by `hashes` `#`.
    mutating func literal(hashes: Int) {
        let start = line
        let multiline = starts(with: "\"\"\"")
        let quote = multiline ? "\"\"\"" : "\""
        for _ in quote.unicodeScalars { advance() }
        let terminator = quote + String(repeating: "#", count: hashes)
        let escape = "\\" + String(repeating: "#", count: hashes)
        var text = ""
        while peek() != nil, !starts(with: terminator) {
            if starts(with: escape) {
                for _ in escape.unicodeScalars { advance() }
                if peek() == "(" {
                    advance()
                    code(until: ")")
                    text += "(…)"
                } else if let escaped = peek() {
                    text.unicodeScalars.append(escaped)
                    advance()
                }
            } else {
                text.unicodeScalars.append(scalars[index])
                advance()
            }
        }
        for _ in terminator.unicodeScalars where peek() != nil { advance() }
        found.append((start, text))
    }
}
