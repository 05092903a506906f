import GuestPassTestSupport
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
