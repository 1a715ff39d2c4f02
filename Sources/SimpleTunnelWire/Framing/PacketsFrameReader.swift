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
        let bytes: UnsafeRawBufferPointer
        let layout: PacketsDocumentLayout
        let tableStart: Int
        let offsetWidth: Int
        var index = 0
        var nextObject = 0
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
                let objectCount = Int(exactly: Self.bigEndian(bytes, at: trailer + 8, width: 8)),
                Self.bigEndian(bytes, at: trailer + 16, width: 8) == 0,
                let tableStart = Int(exactly: Self.bigEndian(bytes, at: trailer + 24, width: 8)), tableStart < trailer
            else { return nil }
            let arrayCount = keyCount - 2
            let arrayObjects = objectCount - (1 + keyCount + 2)
            guard arrayObjects > 0, arrayObjects % arrayCount == 0, arrayObjects / arrayCount - 1 <= maximumPackets else { return nil }
            layout = PacketsDocumentLayout(count: arrayObjects / arrayCount - 1, carriesSegmentSizes: arrayCount == 3)
            offsetWidth = Format.byteWidth(of: UInt64(tableStart))
            guard Int(bytes[trailer + 6]) == offsetWidth, Int(bytes[trailer + 7]) == layout.referenceWidth,
                tableStart + objectCount * offsetWidth == trailer
            else { return nil }
            self.bytes = bytes
            self.tableStart = tableStart
            index = magic
        }

        /// The packets, each a slice of `document`; nil at the first byte our writer would not have made.
        mutating func readPackets(from document: ByteBuffer) -> [TunnelPacket]? {
            let keyCount = layout.keyCount, count = layout.count, width = layout.referenceWidth
            guard beginObject(), self.count(of: .dictionary) == keyCount else { return nil }
            for slot in 0..<keyCount where reference(width) != 1 + slot { return nil }
            for slot in 0..<keyCount where reference(width) != layout.valueObject(slot) { return nil }
            // The key strings lie one after another: their offsets, then their bytes in one comparison.
            for key in PacketsDocumentLayout.keyObjects[..<keyCount] {
                guard beginObject() else { return nil }
                index += key.count
            }
            let keys = PacketsDocumentLayout.keyRegions[keyCount - 4]
            index -= keys.count
            guard keys.count <= tableStart - index, let start = bytes.baseAddress,
                keys.withUnsafeBytes({ key in key.baseAddress.map { memcmp($0, start + index, key.count) == 0 } ?? false })
            else { return nil }
            index += keys.count
            guard beginObject(), let identifier = integer(), beginObject(), integer() == Int64(TunnelCommand.packets.rawValue) else { return nil }
            self.identifier = identifier

            var packets: [TunnelPacket] = []
            packets.reserveCapacity(count)
            guard beginArray(slot: 2) else { return nil }
            for _ in 0..<count {
                guard beginObject(), let length = self.count(of: .data), length <= tableStart - index,
                    let slice = document.getSlice(at: document.readerIndex + index, length: length)
                else { return nil }
                index += length
                packets.append(TunnelPacket(bytes: slice, protocolNumber: 0))
            }
            guard beginArray(slot: 3) else { return nil }
            for position in 0..<count {
                guard beginObject(), let number = integer() else { return nil }
                packets[position].protocolNumber = number
            }
            if layout.arrayCount == 3 {
                guard beginArray(slot: 4) else { return nil }
                for position in 0..<count {
                    guard beginObject(), let number = integer(), let size = UInt16(exactly: number) else { return nil }
                    packets[position].segmentSize = size
                }
            }
            return index == tableStart ? packets : nil
        }

        // MARK: Pieces

        /// True when the table puts the next object where the cursor is.
        private mutating func beginObject() -> Bool {
            guard nextObject < layout.objectCount else { return false }
            let entry = Self.bigEndian(bytes, at: tableStart + nextObject * offsetWidth, width: offsetWidth)
            nextObject += 1
            return entry == UInt64(index)
        }

        /// An array's marker and its references to the elements that follow it.
        private mutating func beginArray(slot: Int) -> Bool {
            let object = layout.valueObject(slot)
            guard object == nextObject, beginObject(), count(of: .array) == layout.count else { return false }
            for element in 0..<layout.count where reference(layout.referenceWidth) != object + 1 + element { return false }
            return true
        }

        /// A marker's count, inline below 15, else as the integer object after it.
        private mutating func count(of marker: BinaryPropertyListFormat.Marker) -> Int? {
            guard index < tableStart, bytes[index] >> 4 == marker.rawValue else { return nil }
            let inline = Int(bytes[index] & 0x0F)
            index += 1
            if inline < Int(BinaryPropertyListFormat.extendedCount) { return inline }
            guard let count = integer(), count >= Int64(BinaryPropertyListFormat.extendedCount) else { return nil }
            return Int(exactly: count)
        }

        /// An integer object in the form our writer gives its value.
        private mutating func integer() -> Int64? {
            guard index < tableStart, bytes[index] >> 4 == BinaryPropertyListFormat.Marker.integer.rawValue else { return nil }
            let exponent = Int(bytes[index] & 0x0F)
            guard exponent <= 3 else { return nil }
            let width = 1 << exponent
            guard 1 + width <= tableStart - index else { return nil }
            let value = Int64(bitPattern: Self.bigEndian(bytes, at: index + 1, width: width))
            guard RawDocumentStore.integerWidth(value) == width else { return nil }
            index += 1 + width
            return value
        }

        private mutating func reference(_ width: Int) -> Int {
            guard width <= tableStart - index else { return -1 }
            defer { index += width }
            return Int(truncatingIfNeeded: Self.bigEndian(bytes, at: index, width: width))
        }

        /// The `width`-byte (1, 2, 4 or 8) big-endian number at `offset`, which the caller has checked is in `bytes`.
        private static func bigEndian(_ bytes: UnsafeRawBufferPointer, at offset: Int, width: Int) -> UInt64 {
            switch width {
            case 1: return UInt64(bytes[offset])
            case 2: return UInt64(UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
            case 4: return UInt64(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            default: return UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            }
        }
    }
}
