/// A set of object numbers `0..<count`, as bits. Documents of up to 64 objects
/// (every message but configuration replies) keep it in one word and allocate
/// nothing; larger ones use `count / 8` bytes, at most 16 KiB for a 128 KiB frame.
struct ObjectSet {
    private var small: UInt64 = 0
    private var words: [UInt64]

    init(count: Int) {
        words = count <= 64 ? [] : Array(repeating: 0, count: (count + 63) / 64)
    }

    /// Adds `object`; true when it was not in the set before.
    mutating func insert(_ object: Int) -> Bool {
        let bit = UInt64(1) << UInt64(object & 63)
        if words.isEmpty {
            defer { small |= bit }
            return small & bit == 0
        }
        let word = object >> 6
        defer { words[word] |= bit }
        return words[word] & bit == 0
    }
}
