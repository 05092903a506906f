import Testing

@testable import PostgRESTGrammar

/// Malformed parameters fail with PostgREST's message (the parameter, then Parsec's line and column) and details
/// (`unexpected … expecting …`), as PostgREST's specs and `QueryParams.hs` doctests expect for the same input.
@Suite struct ErrorMessageTests {
    static func expectError(_ key: String, _ value: String, message: String, details: String?, sourceLocation: SourceLocation = #_sourceLocation) {
        let error = grammarError([(key, value)])
        #expect(error?.code == "PGRST100", sourceLocation: sourceLocation)
        #expect(error?.message == message, sourceLocation: sourceLocation)
        if let details { #expect(error?.details == details, sourceLocation: sourceLocation) }
    }

    @Test func fromPostgRESTSpecs() {
        // QuerySpec "gives meaningful error message on bad syntax"
        Self.expectError(
            "order", "id.asc.nullslasttt", message: #""failed to parse order (id.asc.nullslasttt)" (line 1, column 17)"#,
            details: #"unexpected 't' expecting "," or end of input"#)
        // QuerySpec "fails if an operator is not given"
        Self.expectError(
            "id", "0", message: #""failed to parse filter (0)" (line 1, column 1)"#,
            details: #"unexpected "0" expecting "not" or operator (eq, gt, ...)"#)
        // AndOrParamsSpec "cannot have zero conditions"
        Self.expectError(
            "or", "()", message: #""failed to parse logic tree (())" (line 1, column 4)"#,
            details: #"unexpected ")" expecting field name (* or [a..z0..9_$]), negation operator (not) or logic operator (and, or)"#)
        // InsertSpec: empty columns
        Self.expectError(
            "columns", "", message: #""failed to parse columns parameter ()" (line 1, column 1)"#,
            details: "unexpected end of input expecting field name (* or [a..z0..9_$])")
        // JsonOperatorSpec
        Self.expectError(
            "select", "data->(!@#$%^&*_d->>!@#$%^&*_e::integer",
            message: #""failed to parse select parameter (data->(!@#$%^&*_d->>!@#$%^&*_e::integer)" (line 1, column 7)"#,
            details: #"unexpected "(" expecting "-", digit or any non reserved character different from: .,>()"#)
        Self.expectError(
            "select", "data->>--34", message: #""failed to parse select parameter (data->>--34)" (line 1, column 9)"#,
            details: #"unexpected "-" expecting digit"#)
    }

    @Test func fromQueryParamsDoctests() {
        Self.expectError(
            "a.b", "noop.0", message: #""failed to parse filter (noop.0)" (line 1, column 1)"#,
            details: #"unexpected "o" expecting "not" or operator (eq, gt, ...)"#)
        Self.expectError(
            "id", "fts().value", message: #""failed to parse filter (fts().value)" (line 1, column 5)"#,
            details: #"unexpected ")" expecting operator (eq, gt, ...)"#)
        Self.expectError(
            "id", "eq().value", message: #""failed to parse filter (eq().value)" (line 1, column 4)"#,
            details: #"unexpected ")" expecting operator (eq, gt, ...)"#)
        Self.expectError(
            "id", "is().value", message: #""failed to parse filter (is().value)" (line 1, column 3)"#,
            details: #"unexpected "(" expecting operator (eq, gt, ...)"#)
        Self.expectError(
            "id", "in().value", message: #""failed to parse filter (in().value)" (line 1, column 3)"#,
            details: #"unexpected "(" expecting operator (eq, gt, ...)"#)
        // `eq` is read, then neither `(any)` nor the `.` follows at column 3.
        Self.expectError(
            "id", "eqx.1", message: #""failed to parse filter (eqx.1)" (line 1, column 3)"#,
            details: #"unexpected "x" expecting operator (eq, gt, ...)"#)
        Self.expectError(
            "order", "id.ac", message: #""failed to parse order (id.ac)" (line 1, column 4)"#,
            details: #"unexpected "c" expecting "asc", "desc", "nullsfirst" or "nullslast""#)
        Self.expectError(
            "order", "id.descc", message: #""failed to parse order (id.descc)" (line 1, column 8)"#,
            details: #"unexpected 'c' expecting delimiter (.), "," or end of input"#)
        Self.expectError(
            "order", "id.nullslasttt", message: #""failed to parse order (id.nullslasttt)" (line 1, column 13)"#,
            details: #"unexpected 't' expecting "," or end of input"#)
        Self.expectError(
            "order", "id.asc.nlsfst", message: #""failed to parse order (id.asc.nlsfst)" (line 1, column 8)"#,
            details: #"unexpected "l" expecting "nullsfirst" or "nullslast""#)
        // Ordering by an embedded column is not supported: PostgREST's own error for the malformed form.
        Self.expectError(
            "order", "clients(name,id)", message: #""failed to parse order (clients(name,id))" (line 1, column 8)"#,
            details: #"unexpected '(' expecting letter, digit, "-", "->>", "->", delimiter (.), "," or end of input"#)
        Self.expectError(
            "or", "(id.in.1,2,id.eq.3)", message: #""failed to parse logic tree ((id.in.1,2,id.eq.3))" (line 1, column 10)"#,
            details: #"unexpected "1" expecting "(""#)
        Self.expectError(
            "and", "(ord(id.eq.1,id.eq.1),id.eq.2)", message: #""failed to parse logic tree ((ord(id.eq.1,id.eq.1),id.eq.2))" (line 1, column 7)"#,
            details: #"unexpected "d" expecting "(""#)
        Self.expectError(
            "or", "(id.eq.1,not.xor(id.eq.2,id.eq.3))",
            message: #""failed to parse logic tree ((id.eq.1,not.xor(id.eq.2,id.eq.3)))" (line 1, column 16)"#,
            details: #"unexpected "x" expecting logic operator (and, or)"#)
        Self.expectError(
            "select", "*!hint", message: #""failed to parse select parameter (*!hint)" (line 1, column 2)"#,
            details: #"unexpected '!' expecting ")", "," or end of input"#)
        Self.expectError(
            "select", "name::", message: #""failed to parse select parameter (name::)" (line 1, column 7)"#,
            details: "unexpected end of input expecting letter or digit")
        Self.expectError(
            "select", "data->>-78xy", message: #""failed to parse select parameter (data->>-78xy)" (line 1, column 11)"#,
            details: #"unexpected 'x' expecting digit, "->", "::", ".", "," or end of input"#)
        Self.expectError(
            "select", "name!hint", message: #""failed to parse select parameter (name!hint)" (line 1, column 5)"#,
            details: #"unexpected '!' expecting letter, digit, "-", "->>", "->", "::", ".", ")", "," or end of input"#)
        Self.expectError(
            "select", "id,clients(name[])", message: #""failed to parse select parameter (id,clients(name[]))" (line 1, column 16)"#, details: nil)
    }

    @Test func positionsFollowParsecLinesAndTabs() {
        Self.expectError(
            "id", "\teqx", message: "\"failed to parse filter (\teqx)\" (line 1, column 1)",
            details: #"unexpected "\t" expecting "not" or operator (eq, gt, ...)"#)
        Self.expectError("select", "\"a\nb\"!", message: "\"failed to parse select parameter (\"a\nb\"!)\" (line 2, column 3)", details: nil)
        Self.expectError("select", "\tx!", message: "\"failed to parse select parameter (\tx!)\" (line 1, column 10)", details: nil)
        Self.expectError(
            "id", "é", message: #""failed to parse filter (é)" (line 1, column 1)"#,
            details: #"unexpected "\233" expecting "not" or operator (eq, gt, ...)"#)
    }

    @Test func treePathAndLogicPathErrors() {
        Self.expectError(
            "", "eq.1", message: #""failed to parse tree path ()" (line 1, column 1)"#,
            details: "unexpected end of input expecting field name (* or [a..z0..9_$])")
        let error = grammarError([(".or", "(a.eq.1)")])
        #expect(error?.message == #""failed to parse logic path (.or)" (line 1, column 1)"#)
    }
}
