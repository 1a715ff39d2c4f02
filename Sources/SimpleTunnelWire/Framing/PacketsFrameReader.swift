import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a `packets` message laid out exactly as `PacketsDocumentLayout`
/// (what `PacketsFrameWriter`, and so every peer of ours, sends) straight
/// into the message, with no property-list values built: the IP path
/// receives one for every batch of packets.
///
/// Anything else is nil and goes to the general reader: another message,
/// another writer's layout (Apple's uniques objects and orders keys its own
/// way), more than `maximumPackets` packets, a segment size the message would
/// refuse. Every object's marker, form, reference and table entry must be the
/// one our writer makes, so what this accepts the general reader accepts too
/// and reads as the same message.
enum PacketsFrameReader {
    /// Larger messages take the general reader, whose budgets (PROTOCOL.md
    /// B5) then apply; this many are far inside them.
    static let maximumPackets = 256

    static func read(_ document: ByteBuffer) -> TunnelMessage? {
        document.withUnsafeReadableBytes { bytes in
            guard var cursor = Cursor(bytes), let packets = cursor.readPackets(from: document) else { return nil }
            return .packets(identifier: cursor.identifier, packets: packets)
        }
    }
}

extension PacketsFrameReader {
    private struct Cursor {
        let layout: PacketsDocumentLayout
        var walk: WriterLayoutCursor
        var identifier: TunnelConnectionIdentifier = 0

        /// Checks the magic and the trailer against the layout the dictionary's key count and the object count imply.
        init?(_ bytes: UnsafeRawBufferPointer) {
            typealias Format = BinaryPropertyListFormat
            let magic = Format.magic.count
            guard bytes.count > magic + Format.trailerLength else { return nil }
            // The top dictionary's marker first: most other messages have another number of keys.
            let keyCount = Int(bytes[magic]) - Int(Format.Marker.dictionary.rawValue << 4)
            guard keyCount == 4 || keyCount == 5, BinaryPropertyListReader.hasMagic(bytes) else { return nil }
            let trailer = bytes.count - Format.trailerLength
            guard (0..<6).allSatisfy({ bytes[trailer + $0] == 0 }),
                let objectCount = Int(exactly: BinaryPropertyListFormat.bigEndian(bytes, at: trailer + 8, width: 8)),
                BinaryPropertyListFormat.bigEndian(bytes, at: trailer + 16, width: 8) == 0,
                let tableStart = Int(exactly: BinaryPropertyListFormat.bigEndian(bytes, at: trailer + 24, width: 8)), tableStart < trailer
            else { return nil }
            let arrayCount = keyCount - 2
            let arrayObjects = objectCount - (1 + keyCount + 2)
            guard arrayObjects > 0, arrayObjects % arrayCount == 0, arrayObjects / arrayCount - 1 <= maximumPackets else { return nil }
            layout = PacketsDocumentLayout(count: arrayObjects / arrayCount - 1, carriesSegmentSizes: arrayCount == 3)
            let offsetWidth = Format.byteWidth(of: UInt64(tableStart))
            guard Int(bytes[trailer + 6]) == offsetWidth, Int(bytes[trailer + 7]) == layout.referenceWidth,
                tableStart + objectCount * offsetWidth == trailer
            else { return nil }
            walk = WriterLayoutCursor(bytes: bytes, tableStart: tableStart, offsetWidth: offsetWidth, objectCount: layout.objectCount, index: magic)
        }

        /// The packets, each a slice of `document`; nil at the first byte our writer would not have made.
        mutating func readPackets(from document: ByteBuffer) -> [TunnelPacket]? {
            let keyCount = layout.keyCount, count = layout.count, width = layout.referenceWidth
            guard walk.beginObject(), walk.count(of: .dictionary) == keyCount else { return nil }
            for slot in 0..<keyCount where walk.reference(width) != 1 + slot { return nil }
            for slot in 0..<keyCount where walk.reference(width) != layout.valueObject(slot) { return nil }
            // The key strings lie one after another: their offsets, then their bytes in one comparison.
            for key in PacketsDocumentLayout.keyObjects[..<keyCount] {
                guard walk.beginObject() else { return nil }
                walk.index += key.count
            }
            let keys = PacketsDocumentLayout.keyRegions[keyCount - 4]
            walk.index -= keys.count
            guard keys.count <= walk.tableStart - walk.index, let start = walk.bytes.baseAddress,
                keys.withUnsafeBytes({ key in key.baseAddress.map { memcmp($0, start + walk.index, key.count) == 0 } ?? false })
            else { return nil }
            walk.index += keys.count
            guard walk.beginObject(), let identifier = walk.integer(), walk.beginObject(), walk.integer() == Int64(TunnelCommand.packets.rawValue) else { return nil }
            self.identifier = identifier

            var packets: [TunnelPacket] = []
            packets.reserveCapacity(count)
            guard beginArray(slot: 2) else { return nil }
            for _ in 0..<count {
                guard walk.beginObject(), let length = walk.count(of: .data), length <= walk.tableStart - walk.index,
                    let slice = document.getSlice(at: document.readerIndex + walk.index, length: length)
                else { return nil }
                walk.index += length
                packets.append(TunnelPacket(bytes: slice, protocolNumber: 0))
            }
            guard beginArray(slot: 3) else { return nil }
            for position in 0..<count {
                guard walk.beginObject(), let number = walk.integer() else { return nil }
                packets[position].protocolNumber = number
            }
            if layout.arrayCount == 3 {
                guard beginArray(slot: 4) else { return nil }
                for position in 0..<count {
                    guard walk.beginObject(), let number = walk.integer(), let size = UInt16(exactly: number) else { return nil }
                    packets[position].segmentSize = size
                }
            }
            return walk.index == walk.tableStart ? packets : nil
        }

        // MARK: Pieces

        /// An array's marker and its references to the elements that follow it.
        private mutating func beginArray(slot: Int) -> Bool {
            let object = layout.valueObject(slot)
            guard object == walk.nextObject, walk.beginObject(), walk.count(of: .array) == layout.count else { return false }
            for element in 0..<layout.count where walk.reference(layout.referenceWidth) != object + 1 + element { return false }
            return true
        }
    }
}
