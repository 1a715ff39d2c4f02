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
        valueBytes += RawDocumentStore.integerLength(value)
    }

    mutating func string(_ value: String) {
        guard let count = BinaryPropertyListFormat.asciiByteCount(of: value) else {
            isWritable = false
            return
        }
        valueBytes += RawDocumentStore.markerLength(count: count) + count
    }

    mutating func data(_ value: ByteBuffer) {
        let count = value.readableBytes
        valueBytes += RawDocumentStore.markerLength(count: count) + count
        if !hasDetached, count >= minimumDetached {
            hasDetached = true
            detachedBytes = count
        }
    }

    /// The document's length, detached payload included.
    func documentLength(_ shape: ScalarDictionaryShape) -> Int {
        let tableStart = shape.head.count + valueBytes
        return tableStart + RawDocumentStore.tableLength(objectCount: shape.objectCount, tableStart: tableStart)
    }
}

/// Writes a dictionary of scalars in one pass into memory reserved for
/// exactly its size (`RawDocumentStore`). The bytes are those of
/// `BinaryPropertyListWriter.writeDictionary` for the same entries.
struct ScalarDictionaryWriter: ScalarValueSink {
    private var raw: RawDocumentStore
    private let minimumDetached: Int
    /// Where the document starts in the memory, after the frame's length.
    private var documentStart = 0
    /// The payload left out of the memory, and the index where it belongs.
    private(set) var detached: (index: Int, bytes: ByteBuffer)?
    /// Document offsets of the values so far, for the offset table (14: `ScalarDictionaryShape.maximumKeys`).
    private var valueOffsets = InlineArray<14, Int>(repeating: 0)
    private var valueCount = 0

    private init(memory: UnsafeMutableRawBufferPointer, minimumDetached: Int) {
        self.raw = RawDocumentStore(memory: memory)
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
            writer.raw.store(lengthPrefix.byteSwapped)  // a big-endian store of the swapped value: little-endian
            writer.documentStart = writer.raw.index
            shape.head.withUnsafeBytes { writer.raw.copy($0) }
            writeValues(&writer)
            writer.finish(shape)
            precondition(writer.raw.index == length, "sized and written alike")
            detached = writer.detached.map { .init(offset: start + $0.index, bytes: $0.bytes) }
            return length
        }
        return detached
    }

    // MARK: Values

    mutating func integer(_ value: Int64) {
        recordValueOffset()
        raw.writeInteger(value)
    }

    mutating func string(_ value: String) {
        recordValueOffset()
        let utf8 = value.utf8
        raw.writeMarker(.asciiString, count: utf8.count)
        let copied: Void? = utf8.withContiguousStorageIfAvailable { raw.copy(UnsafeRawBufferPointer($0)) }
        if copied == nil {
            for byte in utf8 { raw.store(byte) }
        }
    }

    mutating func data(_ value: ByteBuffer) {
        recordValueOffset()
        raw.writeMarker(.data, count: value.readableBytes)
        if detached == nil, value.readableBytes >= minimumDetached {
            detached = (raw.index, value)
        } else {
            value.withUnsafeReadableBytes { raw.copy($0) }
        }
    }

    // MARK: Pieces

    /// Where the next byte goes in the document, detached bytes included.
    private var position: Int {
        raw.index - documentStart + (detached?.bytes.readableBytes ?? 0)
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
            raw.storeUnsigned(UInt64(offset), width: offsetWidth)
        }
        for slot in 0..<valueCount {
            raw.storeUnsigned(UInt64(valueOffsets[slot]), width: offsetWidth)
        }
        // Fewer than 256 objects: references take one byte.
        raw.writeTrailer(objectCount: shape.objectCount, referenceWidth: 1, tableStart: tableStart)
    }
}
