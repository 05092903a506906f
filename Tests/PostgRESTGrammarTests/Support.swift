@testable import PostgRESTGrammar

/// Parses a raw query string (as it arrives after `?`).
func parseQuery(_ raw: String) throws -> TableQuery { try QueryGrammar.parse(QueryGrammar.pairs(rawQuery: raw)) }

/// Parses already-decoded pairs.
func parsePairs(_ pairs: [(String, String)]) throws -> TableQuery { try QueryGrammar.parse(pairs.map { (key: $0.0, value: $0.1) }) }

/// The error a decoded query string fails with (nil when it parses).
func grammarError(_ pairs: [(String, String)]) -> QueryGrammarError? {
    do {
        _ = try parsePairs(pairs)
        return nil
    } catch {
        return error as? QueryGrammarError
    }
}

func field(_ column: String, _ path: [JSONPathStep] = []) -> FieldPath { FieldPath(column: column, jsonPath: path) }

func filter(_ column: String, _ op: FilterOperator, _ value: String, negated: Bool = false) -> Filter {
    Filter(field: field(column), condition: Condition(negated: negated, op: op, value: .text(value)))
}

func leaf(_ column: String, _ op: FilterOperator, _ value: String, negated: Bool = false) -> LogicTree {
    .filter(filter(column, op, value, negated: negated))
}

/// A deterministic generator (SplitMix64) for the property tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
