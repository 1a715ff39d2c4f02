import NIOCore

/// Writes a `packets` message's frame in one pass into memory reserved for
/// it, with the bytes `BinaryPropertyListWriter.writeDictionary` makes of its
/// entries but none of the property-list values built first: the IP path
/// sends one of these for every batch of packets.
struct PacketsFrameWriter {
    private var raw: RawDocumentStore
    private let layout: PacketsDocumentLayout
    private let documentStart: Int
    /// Where the offset table starts in the memory (the detached payload is not there).
    private let tableIndex: Int
    private let offsetWidth: Int
    private var detached: (index: Int, bytes: ByteBuffer)?
    private var nextObject = 0

    /// Appends the frame at `buffer`'s writer index, leaving out the first
    /// packet of at least `minimumDetached` bytes (returned, and counted in
    /// the length). Writes nothing when the frame would exceed the maximum.
    static func write(
        identifier: TunnelConnectionIdentifier, packets: [TunnelPacket], into buffer: inout ByteBuffer, detachingDataOf minimumDetached: Int
    ) throws(TunnelFrameError) -> BinaryPropertyListWriter.Detached? {
        let layout = PacketsDocumentLayout(count: packets.count, carriesSegmentSizes: packets.contains { $0.segmentSize != 0 })
        var valueBytes = RawDocumentStore.integerLength(identifier) + RawDocumentStore.integerLength(Int64(TunnelCommand.packets.rawValue))
        valueBytes += layout.arrayCount * layout.arrayHeadLength
        var detachedBytes = 0
        for packet in packets {
            let count = packet.bytes.readableBytes
            valueBytes += RawDocumentStore.markerLength(count: count) + count + RawDocumentStore.integerLength(packet.protocolNumber)
            if layout.arrayCount == 3 { valueBytes += RawDocumentStore.integerLength(Int64(packet.segmentSize)) }
            if detachedBytes == 0, count >= minimumDetached { detachedBytes = count }
        }
        let tableStart = layout.headLength + valueBytes
        let frameLength = TunnelWireLimits.lengthPrefixSize + tableStart + RawDocumentStore.tableLength(objectCount: layout.objectCount, tableStart: tableStart)
        guard frameLength <= TunnelWireLimits.maximumFrameLength else { throw .lengthTooLarge(frameLength) }

        let length = frameLength - detachedBytes
        let start = buffer.writerIndex
        var detached: BinaryPropertyListWriter.Detached?
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { memory in
            var writer = PacketsFrameWriter(
                memory: UnsafeMutableRawBufferPointer(rebasing: memory[..<length]), layout: layout, tableStart: tableStart, detachedBytes: detachedBytes
            )
            writer.raw.store(UInt32(frameLength).byteSwapped)  // a big-endian store of the swapped value: little-endian
            writer.writeDocument(identifier: identifier, packets: packets, minimumDetached: minimumDetached)
            precondition(writer.raw.index == length, "sized and written alike")
            detached = writer.detached.map { .init(offset: start + $0.index, bytes: $0.bytes) }
            return length
        }
        return detached
    }

    private init(memory: UnsafeMutableRawBufferPointer, layout: PacketsDocumentLayout, tableStart: Int, detachedBytes: Int) {
        self.raw = RawDocumentStore(memory: memory)
        self.layout = layout
        self.documentStart = TunnelWireLimits.lengthPrefixSize
        self.tableIndex = documentStart + tableStart - detachedBytes
        self.offsetWidth = BinaryPropertyListFormat.byteWidth(of: UInt64(tableStart))
    }

    private mutating func writeDocument(identifier: TunnelConnectionIdentifier, packets: [TunnelPacket], minimumDetached: Int) {
        BinaryPropertyListFormat.magic.withUnsafeBytes { raw.copy($0) }
        let width = layout.referenceWidth
        beginObject()
        raw.writeMarker(.dictionary, count: layout.keyCount)
        for slot in 0..<layout.keyCount { raw.storeUnsigned(UInt64(1 + slot), width: width) }
        for slot in 0..<layout.keyCount { raw.storeUnsigned(UInt64(layout.valueObject(slot)), width: width) }
        for key in PacketsDocumentLayout.keyObjects[..<layout.keyCount] {
            beginObject()
            key.withUnsafeBytes { raw.copy($0) }
        }
        beginObject()
        raw.writeInteger(identifier)
        beginObject()
        raw.writeInteger(Int64(TunnelCommand.packets.rawValue))

        beginArray(slot: 2)
        for packet in packets {
            beginObject()
            raw.writeMarker(.data, count: packet.bytes.readableBytes)
            if detached == nil, packet.bytes.readableBytes >= minimumDetached {
                detached = (raw.index, packet.bytes)
            } else {
                packet.bytes.withUnsafeReadableBytes { raw.copy($0) }
            }
        }
        beginArray(slot: 3)
        for packet in packets {
            beginObject()
            raw.writeInteger(packet.protocolNumber)
        }
        if layout.arrayCount == 3 {
            beginArray(slot: 4)
            for packet in packets {
                beginObject()
                raw.writeInteger(Int64(packet.segmentSize))
            }
        }

        precondition(nextObject == layout.objectCount && raw.index == tableIndex, "every object written, the table next")
        let tableStart = position
        raw.skip(layout.objectCount * offsetWidth)
        raw.writeTrailer(objectCount: layout.objectCount, referenceWidth: width, tableStart: tableStart)
    }

    /// Where the next byte goes in the document, detached bytes included.
    private var position: Int {
        raw.index - documentStart + (detached?.bytes.readableBytes ?? 0)
    }

    /// Enters the next object's offset in the table: objects are written in number order.
    private mutating func beginObject() {
        raw.storeUnsigned(UInt64(position), width: offsetWidth, at: tableIndex + nextObject * offsetWidth)
        nextObject += 1
    }

    /// The array in `slot`: its marker and the references to its elements, which follow it.
    private mutating func beginArray(slot: Int) {
        let object = layout.valueObject(slot)
        precondition(object == nextObject, "arrays in number order")
        beginObject()
        raw.writeMarker(.array, count: layout.count)
        for element in 0..<layout.count {
            raw.storeUnsigned(UInt64(object + 1 + element), width: layout.referenceWidth)
        }
    }
}
