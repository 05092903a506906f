import Foundation

/// The text form of a one-dimensional `text[]` parameter.
public enum PostgresTextArray {
    /// `{"a","b"}`: the text form of `elements`, each quoted.
    public static func literal(_ elements: [String]) -> String {
        let quoted = elements.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        return "{" + quoted.joined(separator: ",") + "}"
    }
}
