/// The input of one parse: the text's Unicode scalars, and a fatal error that no backtracking may hide.
final class ParseInput {
    let scalars: [Unicode.Scalar]
    /// Set by `Parser.fatal` (an over-deep nesting, an index out of range): the parse fails with it whatever the
    /// alternatives around it would have made of the input.
    var fatalFailure: ParseFailure?

    init(_ text: String) { self.scalars = Array(text.unicodeScalars) }
}

/// The outcome of running a parser, with Parsec's distinction between failing or succeeding *after consuming
/// input* (which commits the enclosing alternative) and *without* (which lets `or` try the next one).
enum Reply<Output> {
    case success(Output, next: Int, consumed: Bool, failure: ParseFailure)
    case failure(ParseFailure, consumed: Bool)
}

/// A parser combinator with Parsec's semantics (`ParsecT`'s bind, `<|>`, `try`, `<?>`, `lookAhead`,
/// `notFollowedBy`, `many`), so that a grammar transcribed from PostgREST's `QueryParams.hs` accepts the same texts
/// and fails at the same positions. `many` and `sepBy` loop instead of recursing, so long lists cost no stack; only
/// the grammar's own nesting recurses, and the grammar bounds it.
struct Parser<Output> {
    let run: (ParseInput, Int) -> Reply<Output>

    init(_ run: @escaping (ParseInput, Int) -> Reply<Output>) { self.run = run }

    static func pure(_ value: Output) -> Parser {
        Parser { _, position in .success(value, next: position, consumed: false, failure: .unknown(at: position)) }
    }

    /// Parsec's `mzero`: fails without consuming and without a message.
    static var zero: Parser { Parser { _, position in .failure(.unknown(at: position), consumed: false) } }

    /// Fails the whole parse with `message` at the current position, whatever alternatives enclose it.
    static func fatal(_ message: String) -> Parser {
        Parser { input, position in
            let failure = ParseFailure(position: position, messages: [.message(message)])
            input.fatalFailure = input.fatalFailure ?? failure
            return .failure(failure, consumed: true)
        }
    }

    /// Builds the parser when it runs: for recursive grammars.
    static func lazy(_ make: @escaping () -> Parser) -> Parser { Parser { input, position in make().run(input, position) } }

    /// Parsec's `>>=`.
    func flatMap<Next>(_ continuation: @escaping (Output) -> Parser<Next>) -> Parser<Next> {
        Parser<Next> { input, position in
            switch self.run(input, position) {
            case .failure(let failure, let consumed): return .failure(failure, consumed: consumed)
            case .success(let value, let next, let consumedFirst, let firstFailure):
                switch continuation(value).run(input, next) {
                case .success(let result, let end, let consumedSecond, let secondFailure):
                    if consumedSecond { return .success(result, next: end, consumed: true, failure: secondFailure) }
                    let failure = firstFailure.isUnknown ? secondFailure : firstFailure.merged(with: secondFailure)
                    return .success(result, next: end, consumed: consumedFirst, failure: failure)
                case .failure(let secondFailure, let consumedSecond):
                    if consumedSecond { return .failure(secondFailure, consumed: true) }
                    let failure = firstFailure.isUnknown ? secondFailure : firstFailure.merged(with: secondFailure)
                    return .failure(failure, consumed: consumedFirst)
                }
            }
        }
    }

    func map<Next>(_ transform: @escaping (Output) -> Next) -> Parser<Next> { self.flatMap { value in .pure(transform(value)) } }

    /// `self *> next`
    func then<Next>(_ next: Parser<Next>) -> Parser<Next> { self.flatMap { _ in next } }

    /// `self <* next`
    func skip<Other>(_ next: Parser<Other>) -> Parser { self.flatMap { value in next.map { _ in value } } }

    /// Parsec's `<|>`: `other` runs only when `self` failed without consuming; their errors merge.
    func or(_ other: Parser) -> Parser {
        Parser { input, position in
            let reply = self.run(input, position)
            guard case .failure(let firstFailure, consumed: false) = reply else { return reply }
            switch other.run(input, position) {
            case .success(let value, let next, let consumed, let failure):
                if consumed { return .success(value, next: next, consumed: true, failure: failure) }
                return .success(value, next: next, consumed: false, failure: firstFailure.merged(with: failure))
            case .failure(let failure, let consumed):
                if consumed { return .failure(failure, consumed: true) }
                return .failure(firstFailure.merged(with: failure), consumed: false)
            }
        }
    }

    /// Parsec's `<?>`: when `self` fails or succeeds without consuming, what it expected is called `label`.
    func label(_ label: String) -> Parser {
        Parser { input, position in
            switch self.run(input, position) {
            case .failure(let failure, consumed: false): return .failure(failure.relabelled(label), consumed: false)
            case .success(let value, let next, consumed: false, let failure) where !failure.isUnknown:
                return .success(value, next: next, consumed: false, failure: failure.relabelled(label))
            case let reply: return reply
            }
        }
    }

    /// Parsec's `try`: a failure after consuming becomes a failure without consuming, so `or` may go on.
    var attempt: Parser {
        Parser { input, position in
            switch self.run(input, position) {
            case .failure(let failure, _): return .failure(failure, consumed: false)
            case let reply: return reply
            }
        }
    }

    /// Parsec's `lookAhead`: succeeds where `self` does, without consuming.
    var lookAhead: Parser {
        Parser { input, position in
            switch self.run(input, position) {
            case .success(let value, _, _, _): return .success(value, next: position, consumed: false, failure: .unknown(at: position))
            case let reply: return reply
            }
        }
    }

    /// `optionMaybe self`
    var optional: Parser<Output?> { self.map { Optional($0) }.or(.pure(nil)) }

    /// `option value self`
    func or(default value: Output) -> Parser { self.or(.pure(value)) }

    /// Parsec's `many`: zero or more, stopping at the first failure that consumed nothing.
    var many: Parser<[Output]> {
        Parser<[Output]> { input, start in
            var values: [Output] = []
            var position = start
            while true {
                switch self.run(input, position) {
                case .failure(let failure, let consumed):
                    if consumed { return .failure(failure, consumed: true) }
                    return .success(values, next: position, consumed: position != start, failure: failure)
                case .success(let value, let next, let consumed, let failure):
                    values.append(value)
                    // A parser that succeeds without consuming would loop forever (Parsec stops with an error).
                    guard consumed else { return .success(values, next: next, consumed: next != start, failure: failure) }
                    position = next
                }
            }
        }
    }

    /// `many1 self`
    var many1: Parser<[Output]> { self.flatMap { first in self.many.map { [first] + $0 } } }

    /// `sepBy1 self separator`
    func separated1<Separator>(by separator: Parser<Separator>) -> Parser<[Output]> {
        self.flatMap { first in separator.then(self).many.map { [first] + $0 } }
    }

    /// `sepBy self separator`
    func separated<Separator>(by separator: Parser<Separator>) -> Parser<[Output]> { self.separated1(by: separator).or(.pure([])) }

    /// `between open close self`
    func between<Open, Close>(_ open: Parser<Open>, _ close: Parser<Close>) -> Parser { open.then(self).skip(close) }
}
