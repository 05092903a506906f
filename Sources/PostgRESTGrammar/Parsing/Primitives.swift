/// Parsec's character parsers, with its error messages (`satisfy` shows the token it met as a one-letter string,
/// `char`/`letter`/`digit` name what they expect, `oneOf`/`noneOf` do not).
enum Primitive {
    static func satisfy(_ predicate: @escaping (Unicode.Scalar) -> Bool) -> Parser<Unicode.Scalar> {
        Parser { input, position in
            guard position < input.scalars.count else {
                return .failure(ParseFailure(position: position, messages: [.systemUnexpected("")]), consumed: false)
            }
            let scalar = input.scalars[position]
            guard predicate(scalar) else {
                return .failure(ParseFailure(position: position, messages: [.systemUnexpected(HaskellShow.string([scalar]))]), consumed: false)
            }
            return .success(scalar, next: position + 1, consumed: true, failure: .unknown(at: position + 1))
        }
    }

    static func char(_ expected: Unicode.Scalar) -> Parser<Unicode.Scalar> { Self.satisfy { $0 == expected }.label(HaskellShow.string([expected])) }

    static func oneOf(_ set: String) -> Parser<Unicode.Scalar> {
        let scalars = Set(set.unicodeScalars)
        return Self.satisfy { scalars.contains($0) }
    }

    static func noneOf(_ set: String) -> Parser<Unicode.Scalar> {
        let scalars = Set(set.unicodeScalars)
        return Self.satisfy { !scalars.contains($0) }
    }

    static var anyChar: Parser<Unicode.Scalar> { Self.satisfy { _ in true } }

    /// Haskell's `isAlpha`: the Unicode letter categories.
    static var letter: Parser<Unicode.Scalar> {
        Self.satisfy { scalar in
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: return true
            default: return false
            }
        }.label("letter")
    }

    /// Haskell's `isDigit`: ASCII digits only.
    static var digit: Parser<Unicode.Scalar> { Self.satisfy { ("0"..."9").contains($0) }.label("digit") }

    /// Parsec's `string`: fails where it started, naming the text; committed once its first character matched.
    static func string(_ text: String) -> Parser<String> {
        let expected = Array(text.unicodeScalars)
        return Parser { input, start in
            for (offset, scalar) in expected.enumerated() {
                let position = start + offset
                let met = position < input.scalars.count ? HaskellShow.string([input.scalars[position]]) : ""
                if met.isEmpty || input.scalars[position] != scalar {
                    let failure = ParseFailure(position: start, messages: [.expected(HaskellShow.string(expected)), .systemUnexpected(met)])
                    return .failure(failure, consumed: offset > 0)
                }
            }
            let end = start + expected.count
            return .success(text, next: end, consumed: !expected.isEmpty, failure: .unknown(at: end))
        }
    }

    /// `text` in lower case or with any of its letters upper-cased (PostgREST's `ciString`).
    static func caseInsensitive(_ text: String) -> Parser<String> {
        var parser = Parser<String>.pure("")
        for scalar in text.unicodeScalars {
            let upper = Unicode.Scalar(String(scalar).uppercased()) ?? scalar
            let one = Self.char(scalar).or(Self.char(upper))
            parser = parser.flatMap { prefix in one.map { _ in prefix + String(scalar) } }
        }
        return parser
    }

    /// Parsec's `eof` (`notFollowedBy anyToken <?> "end of input"`; `anyToken` does not move the position).
    static var endOfInput: Parser<Void> {
        Parser { input, position in
            guard position < input.scalars.count else {
                let failure = ParseFailure(position: position, messages: [.expected("end of input"), .systemUnexpected("")])
                return .success((), next: position, consumed: false, failure: failure)
            }
            let unexpected = ParseFailure.Message.unexpected(HaskellShow.character(input.scalars[position]))
            return .failure(ParseFailure(position: position, messages: [.expected("end of input"), unexpected]), consumed: false)
        }
    }

    /// Parsec's `notFollowedBy` for a one-character parser: fails, after that character, when it matches.
    static func notFollowedBy(_ parser: Parser<Unicode.Scalar>) -> Parser<Void> {
        Parser { input, position in
            switch parser.run(input, position) {
            case .success(let scalar, let next, _, _):
                return .failure(ParseFailure(position: next, messages: [.unexpected(HaskellShow.character(scalar))]), consumed: false)
            case .failure(let failure, _):
                return .success((), next: position, consumed: false, failure: failure)
            }
        }
    }

    /// `many anyChar`: the rest of the input, verbatim.
    static var rest: Parser<String> {
        Parser { input, position in
            let end = input.scalars.count
            let text = String(String.UnicodeScalarView(input.scalars[min(position, end)...]))
            return .success(text, next: end, consumed: end > position, failure: ParseFailure(position: end, messages: [.systemUnexpected("")]))
        }
    }

    /// PostgREST's `ws`: spaces and tabs.
    static var whitespace: Parser<[Unicode.Scalar]> { Self.oneOf(" \t").many }

    /// PostgREST's `lexeme`: `parser` with the spaces and tabs around it skipped.
    static func lexeme<Output>(_ parser: Parser<Output>) -> Parser<Output> { Self.whitespace.then(parser).skip(Self.whitespace) }
}

extension Parser {
    /// Succeeds only when `predicate` holds for the value (Parsec's `guard`, failing like `mzero`).
    func filter(_ predicate: @escaping (Output) -> Bool) -> Parser { self.flatMap { value in predicate(value) ? .pure(value) : .zero } }
}
