/// The document `BinaryPropertyListWriter.writeDictionary` makes of a
/// `packets` message's entries (`TunnelMessage.propertyListEntries`): the
/// dictionary, its keys, then `identifier`, `command` and the arrays
/// `packets`, `protocols` and (PROTOCOL.md B8, when any packet is a
/// super-packet) `segment-sizes`, each followed by its elements. Objects are
/// numbered in the order they are written, so the offset table lists them
/// in document order. `PacketsFrameWriter` writes this layout in one pass and
/// `PacketsFrameReader` reads exactly this layout back.
struct PacketsDocumentLayout {
    /// The dictionary's keys in the order the general writer gives them.
    static let keys: [TunnelMessageKey] = [.identifier, .command, .packets, .protocols, .segmentSizes]
    /// Each key as its string object: marker and ASCII bytes.
    static let keyObjects: [[UInt8]] = keys.map { key in
        let bytes = Array(key.rawValue.utf8)
        precondition(bytes.count < Int(BinaryPropertyListFormat.extendedCount) && bytes.allSatisfy { $0 < 0x80 }, "short ASCII keys")
        return [BinaryPropertyListFormat.Marker.asciiString.rawValue << 4 | UInt8(bytes.count)] + bytes
    }

    /// The key objects of 4 and of 5 keys, one after another, as they lie in the document.
    static let keyRegions: [[UInt8]] = [Array(keyObjects[..<4].joined()), Array(keyObjects.joined())]

    /// Packets in the message.
    let count: Int
    /// 2 (packets and protocols) or 3 (and segment sizes).
    let arrayCount: Int
    let keyCount: Int
    let objectCount: Int
    /// Stored, not computed: every reference and offset-table entry asks for it.
    let referenceWidth: Int

    init(count: Int, carriesSegmentSizes: Bool) {
        self.count = count
        arrayCount = carriesSegmentSizes ? 3 : 2
        keyCount = 2 + arrayCount
        objectCount = 1 + keyCount + 2 + arrayCount * (1 + count)
        referenceWidth = BinaryPropertyListFormat.byteWidth(of: UInt64(objectCount - 1))
    }

    /// The object number of the dictionary's value in `slot` (0 `identifier`,
    /// 1 `command`, then the arrays); an array's elements follow it.
    func valueObject(_ slot: Int) -> Int {
        let first = 1 + keyCount
        return slot < 2 ? first + slot : first + 2 + (slot - 2) * (1 + count)
    }

    /// Bytes from the magic to the first value: the dictionary and its keys.
    var headLength: Int {
        let keyBytes = Self.keyObjects[..<keyCount].reduce(0) { $0 + $1.count }
        return BinaryPropertyListFormat.magic.count + 1 + 2 * keyCount * referenceWidth + keyBytes
    }

    /// Bytes of one array's marker and references.
    var arrayHeadLength: Int { RawDocumentStore.markerLength(count: count) + count * referenceWidth }
}
