/// The known key a misspelt one most likely meant: the same key in another
/// case, or one within two edits (insertions, deletions, substitutions).
func closestKey(to key: String, among known: [String]) -> String? {
    if let sameLetters = known.first(where: { $0.lowercased() == key.lowercased() }) {
        return sameLetters
    }
    let candidates = known.map { (key: $0, distance: editDistance(key.lowercased(), $0.lowercased())) }
    guard let best = candidates.min(by: { $0.distance < $1.distance }), best.distance <= 2 else { return nil }
    return best.key
}

/// Levenshtein distance; keys are short, so the quadratic table is fine.
func editDistance(_ lhs: String, _ rhs: String) -> Int {
    let a = Array(lhs.unicodeScalars), b = Array(rhs.unicodeScalars)
    guard !a.isEmpty else { return b.count }
    guard !b.isEmpty else { return a.count }
    var previous = Array(0...b.count)
    for i in 1...a.count {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in 1...b.count {
            let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
        }
        previous = current
    }
    return previous[b.count]
}
