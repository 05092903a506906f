/// How alike two names are, as PostgREST's "Perhaps you meant" hints judge them (its fuzzy set rescores candidates by
/// Levenshtein distance): one minus the edit distance over the longer name's length, case ignored; 1 is equal.
public func nameSimilarity(_ a: String, _ b: String) -> Double {
    let longer = max(a.unicodeScalars.count, b.unicodeScalars.count, 1)
    return 1 - Double(editDistance(a.lowercased(), b.lowercased())) / Double(longer)
}

/// Levenshtein distance over Unicode scalars (the first 64 of each), for "did you mean" hints on short names.
public func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a.unicodeScalars.prefix(64))
    let b = Array(b.unicodeScalars.prefix(64))
    guard !a.isEmpty else { return b.count }
    guard !b.isEmpty else { return a.count }
    var previous = Array(0...b.count)
    for i in 1...a.count {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return previous[b.count]
}
