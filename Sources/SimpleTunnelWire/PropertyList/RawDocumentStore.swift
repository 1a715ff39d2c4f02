/// Big-endian stores into memory reserved for a whole binary property list,
/// in the object forms `BinaryPropertyListWriter` chooses, with none of
/// `ByteBuffer`'s per-write checks: the one-pass writers size a document
/// first, then write it here. Every store is still bounds-checked against the
/// reservation.
struct RawDocumentStore {
    private let memory: UnsafeMutableRawBufferPointer
    /// Next byte in `memory`.
    private(set) var index = 0

    init(memory: UnsafeMutableRawBufferPointer) {
        self.memory = memory
    }

    // MARK: Objects

    /// An integer object: 1, 2 and 4 bytes unsigned, else 8 signed.
    @inline(__always)
    mutating func writeInteger(_ value: Int64) {
        let width = Self.integerWidth(value)
        // The low nibble is log2 of the width.
        store(BinaryPropertyListFormat.Marker.integer.rawValue << 4 | UInt8(width.trailingZeroBitCount))
        storeUnsigned(UInt64(bitPattern: value), width: width)
    }

    mutating func writeMarker(_ marker: BinaryPropertyListFormat.Marker, count: Int) {
        if count < Int(BinaryPropertyListFormat.extendedCount) {
            store(marker.rawValue << 4 | UInt8(count))
        } else {
            store(marker.rawValue << 4 | BinaryPropertyListFormat.extendedCount)
            writeInteger(Int64(count))
        }
    }

    /// The trailer, after the whole offset table.
    mutating func writeTrailer(objectCount: Int, referenceWidth: Int, tableStart: Int) {
        store(UInt32(0))  // six unused bytes, the last being the sort version
        store(UInt16(0))
        store(UInt8(BinaryPropertyListFormat.byteWidth(of: UInt64(tableStart))))
        store(UInt8(referenceWidth))
        store(UInt64(objectCount))
        store(UInt64(0))  // top object
        store(UInt64(tableStart))
    }

    // MARK: Sizes

    /// Bytes of the payload of an integer object: 1, 2 and 4 unsigned, else 8 signed.
    static func integerWidth(_ value: Int64) -> Int {
        value < 0 ? 8 : BinaryPropertyListFormat.byteWidth(of: UInt64(value))
    }

    static func integerLength(_ value: Int64) -> Int {
        1 + integerWidth(value)
    }

    static func markerLength(count: Int) -> Int {
        count < Int(BinaryPropertyListFormat.extendedCount) ? 1 : 1 + integerLength(Int64(count))
    }

    /// Bytes of the offset table and trailer of a document whose objects end at `tableStart`.
    static func tableLength(objectCount: Int, tableStart: Int) -> Int {
        BinaryPropertyListFormat.byteWidth(of: UInt64(tableStart)) * objectCount + BinaryPropertyListFormat.trailerLength
    }

    // MARK: Bytes

    @inline(__always)
    mutating func storeUnsigned(_ value: UInt64, width: Int) {
        switch width {
        case 1: store(UInt8(truncatingIfNeeded: value))
        case 2: store(UInt16(truncatingIfNeeded: value))
        case 4: store(UInt32(truncatingIfNeeded: value))
        default: store(value)
        }
    }

    /// Stores `value` big-endian.
    @inline(__always)
    mutating func store<Integer: FixedWidthInteger>(_ value: Integer) {
        let width = MemoryLayout<Integer>.size
        precondition(index + width <= memory.count, "write past the reserved size")
        memory.storeBytes(of: value.bigEndian, toByteOffset: index, as: Integer.self)
        index += width
    }

    /// Stores `value` big-endian at `offset`, leaving the next byte where it is.
    @inline(__always)
    mutating func storeUnsigned(_ value: UInt64, width: Int, at offset: Int) {
        let saved = index
        index = offset
        storeUnsigned(value, width: width)
        index = saved
    }

    /// Moves past `count` bytes already stored (with `storeUnsigned(_:width:at:)`).
    mutating func skip(_ count: Int) {
        precondition(index + count <= memory.count, "write past the reserved size")
        index += count
    }

    @inline(__always)
    mutating func copy(_ bytes: UnsafeRawBufferPointer) {
        precondition(index + bytes.count <= memory.count, "write past the reserved size")
        UnsafeMutableRawBufferPointer(rebasing: memory[index..<index + bytes.count]).copyMemory(from: bytes)
        index += bytes.count
    }
}
