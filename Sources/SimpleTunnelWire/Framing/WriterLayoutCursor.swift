/// Walks a binary property list that one of our one-pass writers made, object
/// by object in document order, each checked against the offset table: what
/// the direct readers (`PacketsFrameReader`, `ScalarFrameReader`) share.
/// Each piece is nil or false at the first byte our writer would not have
/// written, so the caller leaves the document to the general reader.
struct WriterLayoutCursor {
    let bytes: UnsafeRawBufferPointer
    /// Where the offset table starts: objects lie before it.
    let tableStart: Int
    let offsetWidth: Int
    /// Objects the document holds, as its trailer says.
    let objectCount: Int
    /// Where the next object starts.
    var index: Int
    /// The object the table should put at `index`.
    var nextObject = 0

    init(bytes: UnsafeRawBufferPointer, tableStart: Int, offsetWidth: Int, objectCount: Int, index: Int) {
        self.bytes = bytes
        self.tableStart = tableStart
        self.offsetWidth = offsetWidth
        self.objectCount = objectCount
        self.index = index
    }

    /// True when the table puts the next object where the cursor is.
    mutating func beginObject() -> Bool {
        guard nextObject < objectCount else { return false }
        let entry = BinaryPropertyListFormat.bigEndian(bytes, at: tableStart + nextObject * offsetWidth, width: offsetWidth)
        nextObject += 1
        return entry == UInt64(index)
    }

    /// A marker's count, inline below 15, else as the integer object after it.
    mutating func count(of marker: BinaryPropertyListFormat.Marker) -> Int? {
        guard index < tableStart, bytes[index] >> 4 == marker.rawValue else { return nil }
        let inline = Int(bytes[index] & 0x0F)
        index += 1
        if inline < Int(BinaryPropertyListFormat.extendedCount) { return inline }
        guard let count = integer(), count >= Int64(BinaryPropertyListFormat.extendedCount) else { return nil }
        return Int(exactly: count)
    }

    /// An integer object in the form our writer gives its value.
    mutating func integer() -> Int64? {
        guard index < tableStart, bytes[index] >> 4 == BinaryPropertyListFormat.Marker.integer.rawValue else { return nil }
        let exponent = Int(bytes[index] & 0x0F)
        guard exponent <= 3 else { return nil }
        let width = 1 << exponent
        guard 1 + width <= tableStart - index else { return nil }
        let value = Int64(bitPattern: BinaryPropertyListFormat.bigEndian(bytes, at: index + 1, width: width))
        guard RawDocumentStore.integerWidth(value) == width else { return nil }
        index += 1 + width
        return value
    }

    /// An object reference of `width` bytes; -1 past the objects.
    mutating func reference(_ width: Int) -> Int {
        guard width <= tableStart - index else { return -1 }
        defer { index += width }
        return Int(truncatingIfNeeded: BinaryPropertyListFormat.bigEndian(bytes, at: index, width: width))
    }
}

extension BinaryPropertyListFormat {
    /// The `width`-byte (1 to 8) big-endian number at `offset`, which the caller has checked is in `bytes`.
    static func bigEndian(_ bytes: UnsafeRawBufferPointer, at offset: Int, width: Int) -> UInt64 {
        switch width {
        case 1: return UInt64(bytes[offset])
        case 2: return UInt64(UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
        case 4: return UInt64(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        case 8: return UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        default:
            var value: UInt64 = 0
            for position in offset..<(offset + width) { value = value << 8 | UInt64(bytes[position]) }
            return value
        }
    }
}
