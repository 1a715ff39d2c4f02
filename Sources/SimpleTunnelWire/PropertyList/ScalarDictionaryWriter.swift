import NIOCore

/// Takes the values of a dictionary of scalars, in key order. A message offers
/// its values twice: first to `ScalarDictionarySize`, then to
/// `ScalarDictionaryWriter`.
protocol ScalarValueSink {
    mutating func integer(_ value: Int64)
    mutating func string(_ value: String)
    mutating func data(_ value: ByteBuffer)
}

/// Sizes a dictionary of scalars before anything is written, so the document
/// can be written in one pass into memory reserved for it.
struct ScalarDictionarySize: ScalarValueSink {
    /// `data` values this large are detached rather than copied (at most one).
    let minimumDetached: Int
    /// Bytes of the value objects, a detached payload included.
    private(set) var valueBytes = 0
    private(set) var detachedBytes = 0
    private var hasDetached = false
    /// False once a string is not ASCII: it goes as UTF-16, which only the general writer writes.
    private(set) var isWritable = true

    init(detachingDataOf minimumDetached: Int) {
        self.minimumDetached = minimumDetached
    }

    mutating func integer(_ value: Int64) {
        valueBytes += ScalarDictionaryWriter.integerLength(value)
    }

    mutating func string(_ value: String) {
        guard let count = BinaryPropertyListFormat.asciiByteCount(of: value) else {
            isWritable = false
            return
        }
        valueBytes += ScalarDictionaryWriter.markerLength(count: count) + count
    }

    mutating func data(_ value: ByteBuffer) {
        let count = value.readableBytes
        valueBytes += ScalarDictionaryWriter.markerLength(count: count) + count
        if !hasDetached, count >= minimumDetached {
            hasDetached = true
            detachedBytes = count
        }
    }

    /// The document's length, detached payload included.
    func documentLength(_ shape: ScalarDictionaryShape) -> Int {
        let tableStart = shape.head.count + valueBytes
        let offsetWidth = BinaryPropertyListFormat.byteWidth(of: UInt64(tableStart))
        return tableStart + offsetWidth * shape.objectCount + BinaryPropertyListFormat.trailerLength
    }
}

/// Writes a dictionary of scalars with raw stores into memory reserved for
/// exactly its size, with none of `ByteBuffer`'s per-write checks. The bytes
/// are those of `BinaryPropertyListWriter.writeDictionary` for the same
/// entries; every store is still bounds-checked against the reservation.
struct ScalarDictionaryWriter: ScalarValueSink {
    private let memory: UnsafeMutableRawBufferPointer
    private let minimumDetached: Int
    /// Next byte in `memory`.
    private var index = 0
    /// Where the document starts in `memory`, after the frame's length.
    private var documentStart = 0
    /// The payload left out of `memory`, and the index where it belongs.
    private(set) var detached: (index: Int, bytes: ByteBuffer)?
    /// Document offsets of the values so far, for the offset table (14: `ScalarDictionaryShape.maximumKeys`).
    private var valueOffsets = InlineArray<14, Int>(repeating: 0)
    private var valueCount = 0

    private init(memory: UnsafeMutableRawBufferPointer, minimumDetached: Int) {
        self.memory = memory
        self.minimumDetached = minimumDetached
    }

    /// Writes at `buffer`'s writer index `lengthPrefix` (little-endian: the
    /// frame's length, written here to spare a `ByteBuffer` write), then the
    /// document: `shape`'s head, the values `writeValues` offers, the offset
    /// table and the trailer. `size` must come from the same values. Returns
    /// the detached payload, if any.
    static func write(
        _ shape: ScalarDictionaryShape, size: ScalarDictionarySize, lengthPrefix: UInt32, into buffer: inout ByteBuffer,
        values writeValues: (inout ScalarDictionaryWriter) -> Void
    ) -> BinaryPropertyListWriter.Detached? {
        let length = MemoryLayout<UInt32>.size + size.documentLength(shape) - size.detachedBytes
        let start = buffer.writerIndex
        var detached: BinaryPropertyListWriter.Detached?
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { memory in
            var writer = ScalarDictionaryWriter(
                memory: UnsafeMutableRawBufferPointer(rebasing: memory[..<length]), minimumDetached: size.minimumDetached
            )
            writer.store(lengthPrefix.byteSwapped)  // a big-endian store of the swapped value: little-endian
            writer.documentStart = writer.index
            shape.head.withUnsafeBytes { writer.copy($0) }
            writeValues(&writer)
            writer.finish(shape)
            precondition(writer.index == length, "sized and written alike")
            detached = writer.detached.map { .init(offset: start + $0.index, bytes: $0.bytes) }
            return length
        }
        return detached
    }

    // MARK: Values

    mutating func integer(_ value: Int64) {
        recordValueOffset()
        writeInteger(value)
    }

    mutating func string(_ value: String) {
        recordValueOffset()
        let utf8 = value.utf8
        writeMarker(.asciiString, count: utf8.count)
        let copied: Void? = utf8.withContiguousStorageIfAvailable { copy(UnsafeRawBufferPointer($0)) }
        if copied == nil {
            for byte in utf8 { store(byte) }
        }
    }

    mutating func data(_ value: ByteBuffer) {
        recordValueOffset()
        writeMarker(.data, count: value.readableBytes)
        if detached == nil, value.readableBytes >= minimumDetached {
            detached = (index, value)
        } else {
            value.withUnsafeReadableBytes { copy($0) }
        }
    }

    // MARK: Sizes (for ScalarDictionarySize)

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

    // MARK: Pieces

    /// Where the next byte goes in the document, detached bytes included.
    private var position: Int {
        index - documentStart + (detached?.bytes.readableBytes ?? 0)
    }

    @inline(__always)
    private mutating func recordValueOffset() {
        precondition(valueCount < valueOffsets.count, "at most \(valueOffsets.count) values")
        valueOffsets[valueCount] = position
        valueCount += 1
    }

    /// The offset table and the trailer.
    private mutating func finish(_ shape: ScalarDictionaryShape) {
        precondition(valueCount == shape.keyCount, "one value per key")
        let tableStart = position
        let offsetWidth = BinaryPropertyListFormat.byteWidth(of: UInt64(tableStart))
        for offset in shape.headOffsets {
            storeUnsigned(UInt64(offset), width: offsetWidth)
        }
        for slot in 0..<valueCount {
            storeUnsigned(UInt64(valueOffsets[slot]), width: offsetWidth)
        }
        store(UInt32(0))  // six unused bytes, the last being the sort version
        store(UInt16(0))
        store(UInt8(offsetWidth))
        store(UInt8(1))  // reference width: fewer than 256 objects
        store(UInt64(shape.objectCount))
        store(UInt64(0))  // top object
        store(UInt64(tableStart))
    }

    @inline(__always)
    private mutating func writeInteger(_ value: Int64) {
        let width = Self.integerWidth(value)
        // The low nibble is log2 of the width.
        store(BinaryPropertyListFormat.Marker.integer.rawValue << 4 | UInt8(width.trailingZeroBitCount))
        storeUnsigned(UInt64(bitPattern: value), width: width)
    }

    private mutating func writeMarker(_ marker: BinaryPropertyListFormat.Marker, count: Int) {
        if count < Int(BinaryPropertyListFormat.extendedCount) {
            store(marker.rawValue << 4 | UInt8(count))
        } else {
            store(marker.rawValue << 4 | BinaryPropertyListFormat.extendedCount)
            writeInteger(Int64(count))
        }
    }

    @inline(__always)
    private mutating func storeUnsigned(_ value: UInt64, width: Int) {
        switch width {
        case 1: store(UInt8(truncatingIfNeeded: value))
        case 2: store(UInt16(truncatingIfNeeded: value))
        case 4: store(UInt32(truncatingIfNeeded: value))
        default: store(value)
        }
    }

    /// Stores `value` big-endian.
    @inline(__always)
    private mutating func store<Integer: FixedWidthInteger>(_ value: Integer) {
        let width = MemoryLayout<Integer>.size
        precondition(index + width <= memory.count, "write past the reserved size")
        memory.storeBytes(of: value.bigEndian, toByteOffset: index, as: Integer.self)
        index += width
    }

    @inline(__always)
    private mutating func copy(_ bytes: UnsafeRawBufferPointer) {
        precondition(index + bytes.count <= memory.count, "write past the reserved size")
        UnsafeMutableRawBufferPointer(rebasing: memory[index..<index + bytes.count]).copyMemory(from: bytes)
        index += bytes.count
    }
}
