/// The bytes of a small binary property list that depend only on its keys:
/// the magic, the top dictionary (marker and references) and the key
/// strings. Built once per message shape, so encoding a message copies them
/// in one go instead of working them out again.
///
/// Objects are numbered as `BinaryPropertyListWriter` numbers a dictionary of
/// scalars (0 the dictionary, 1...n the keys, n+1...2n the values), so
/// `ScalarDictionaryWriter` makes the same bytes.
struct ScalarDictionaryShape: Sendable {
    /// Keeps the dictionary's count in its marker and every reference in one byte.
    static let maximumKeys = 14

    let keyCount: Int
    /// Magic, dictionary object, key objects: the document up to the first value.
    let head: [UInt8]
    /// Offsets of objects 0...n (the dictionary and its keys) in the document.
    let headOffsets: [Int]

    var objectCount: Int { 1 + 2 * keyCount }

    /// `keys` are the protocol's constants: ASCII, shorter than 256 bytes.
    init(keys: [String]) {
        precondition((1...Self.maximumKeys).contains(keys.count), "1 to \(Self.maximumKeys) keys")
        typealias Format = BinaryPropertyListFormat
        var head = Format.magic
        var headOffsets = [head.count]
        head.append(Format.Marker.dictionary.rawValue << 4 | UInt8(keys.count))
        head += (1...2 * keys.count).map { UInt8($0) }  // references to the keys, then to the values
        for key in keys {
            let bytes = Array(key.utf8)
            precondition(bytes.allSatisfy { $0 < 0x80 } && bytes.count <= 0xFF, "short ASCII keys only")
            headOffsets.append(head.count)
            let marker = Format.Marker.asciiString.rawValue << 4
            if bytes.count < Int(Format.extendedCount) {
                head.append(marker | UInt8(bytes.count))
            } else {
                // The count as a one-byte integer object.
                head += [marker | Format.extendedCount, Format.Marker.integer.rawValue << 4, UInt8(bytes.count)]
            }
            head += bytes
        }
        self.keyCount = keys.count
        self.head = head
        self.headOffsets = headOffsets
    }
}
