import NIOCore

/// Writes Apple's binary property lists (`bplist00`) straight into a
/// `ByteBuffer`, in one pass over the values and one copy of each payload.
///
/// Objects are numbered in pre-order (a container, then its keys, then its
/// values) and written in that order, so each container can name its
/// children's numbers from the sizes of the subtrees before them. Nothing is
/// uniqued; CoreFoundation does not require it.
public enum BinaryPropertyListWriter {
    /// Writes `value` at the buffer's writer index. Dictionary keys are written
    /// in sorted order, so equal values give equal bytes.
    public static func write(_ value: PropertyListValue, into buffer: inout ByteBuffer) {
        // `consume` hands the storage over so appending does not copy it.
        var writer = Writer(objectCount: Writer.objectCount(of: value), buffer: consume buffer)
        writer.writeObject(value, index: 0)
        writer.finish()
        buffer = writer.buffer
    }

    /// Writes a dictionary whose keys appear in the order given (the message
    /// encoder's path, which knows its keys and skips sorting them), except
    /// that the bytes of the first `data` value of at least `minimumDetached`
    /// bytes (`Int.max`: none) are left out of `buffer`: the
    /// document is `buffer` up to `Detached.offset`, then `Detached.bytes`, then
    /// the rest of `buffer`. Offsets count the detached bytes, so the three
    /// pieces are byte for byte what writing without detaching makes, without
    /// copying the payload.
    @discardableResult
    public static func writeDictionary(
        _ entries: [(key: String, value: PropertyListValue)], into buffer: inout ByteBuffer, detachingDataOf minimumDetached: Int = Int.max
    ) -> Detached? {
        var count = 1 + entries.count
        for entry in entries {
            count += Writer.objectCount(of: entry.value)
        }
        var writer = Writer(objectCount: count, buffer: consume buffer, minimumDetached: minimumDetached)
        writer.writeDictionary(entries, index: 0)
        writer.finish()
        buffer = writer.buffer
        return writer.detached
    }

    /// A payload left out of the written buffer; it belongs at writer index `offset`.
    public struct Detached {
        public var offset: Int
        public var bytes: ByteBuffer
    }

    public static func bytes(_ value: PropertyListValue) -> ByteBuffer {
        var buffer = ByteBuffer()
        write(value, into: &buffer)
        return buffer
    }
}

extension BinaryPropertyListWriter {
    fileprivate struct Writer {
        var buffer: ByteBuffer
        /// Writer index where the document starts; offsets are relative to it.
        let start: Int
        let referenceSize: Int
        var offsets: [Int]
        /// `data` values this large are detached rather than copied (at most one).
        let minimumDetached: Int
        var detached: Detached?

        init(objectCount: Int, buffer: consuming ByteBuffer, minimumDetached: Int = .max) {
            self.start = buffer.writerIndex
            // Moved, not copied: a second reference would make the first write copy the whole storage.
            self.buffer = consume buffer
            self.minimumDetached = minimumDetached
            self.referenceSize = BinaryPropertyListFormat.byteWidth(of: UInt64(objectCount - 1))
            self.offsets = Array(repeating: 0, count: objectCount)
            self.buffer.writeBytes(BinaryPropertyListFormat.magic)
        }

        /// Where the next byte goes in the document, detached bytes included.
        var position: Int {
            buffer.writerIndex - start + (detached?.bytes.readableBytes ?? 0)
        }

        static func objectCount(of value: PropertyListValue) -> Int {
            switch value {
            case .array(let elements):
                return elements.reduce(1) { $0 + objectCount(of: $1) }
            case .dictionary(let entries):
                return entries.values.reduce(1 + entries.count) { $0 + objectCount(of: $1) }
            case .string, .integer, .real, .boolean, .data, .date, .uid:
                return 1
            }
        }

        mutating func writeObject(_ value: PropertyListValue, index: Int) {
            switch value {
            case .array(let elements):
                offsets[index] = position
                writeMarker(.array, count: elements.count)
                var child = index + 1
                for element in elements {
                    writeReference(child)
                    child += Self.objectCount(of: element)
                }
                child = index + 1
                for element in elements {
                    writeObject(element, index: child)
                    child += Self.objectCount(of: element)
                }
            case .dictionary(let entries):
                let sorted = entries.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
                writeDictionary(sorted, index: index)
            case .string(let text):
                offsets[index] = position
                writeString(text)
            case .integer(let number):
                offsets[index] = position
                writeInteger(number)
            case .real(let number):
                offsets[index] = position
                buffer.writeInteger(UInt8(0x23))
                buffer.writeInteger(number.bitPattern, endianness: .big)
            case .date(let seconds):
                offsets[index] = position
                buffer.writeInteger(UInt8(0x33))
                buffer.writeInteger(seconds.bitPattern, endianness: .big)
            case .boolean(let flag):
                offsets[index] = position
                buffer.writeInteger(flag ? BinaryPropertyListFormat.trueByte : BinaryPropertyListFormat.falseByte)
            case .data(let bytes):
                offsets[index] = position
                writeMarker(.data, count: bytes.readableBytes)
                if detached == nil, bytes.readableBytes >= minimumDetached {
                    detached = Detached(offset: buffer.writerIndex, bytes: bytes)
                } else {
                    buffer.writeImmutableBuffer(bytes)
                }
            case .uid(let number):
                offsets[index] = position
                let width = BinaryPropertyListFormat.byteWidth(of: number)
                buffer.writeInteger(BinaryPropertyListFormat.Marker.uid.rawValue << 4 | UInt8(width - 1))
                writeUnsigned(number, width: width)
            }
        }

        mutating func writeDictionary(_ entries: [(key: String, value: PropertyListValue)], index: Int) {
            offsets[index] = position
            writeMarker(.dictionary, count: entries.count)
            for slot in entries.indices {
                writeReference(index + 1 + slot)
            }
            var child = index + 1 + entries.count
            for entry in entries {
                writeReference(child)
                child += Self.objectCount(of: entry.value)
            }
            for (slot, entry) in entries.enumerated() {
                offsets[index + 1 + slot] = position
                writeString(entry.key)
            }
            child = index + 1 + entries.count
            for entry in entries {
                writeObject(entry.value, index: child)
                child += Self.objectCount(of: entry.value)
            }
        }

        /// Appends the offset table and the trailer.
        mutating func finish() {
            let tableStart = position
            let offsetSize = BinaryPropertyListFormat.byteWidth(of: UInt64(tableStart))
            for offset in offsets {
                writeUnsigned(UInt64(offset), width: offsetSize)
            }
            buffer.writeRepeatingByte(0, count: 6)  // unused, then sort version
            buffer.writeInteger(UInt8(offsetSize))
            buffer.writeInteger(UInt8(referenceSize))
            buffer.writeInteger(UInt64(offsets.count), endianness: .big)
            buffer.writeInteger(UInt64(0), endianness: .big)  // top object
            buffer.writeInteger(UInt64(tableStart), endianness: .big)
        }

        // MARK: Pieces

        private mutating func writeString(_ text: String) {
            if let count = BinaryPropertyListFormat.asciiByteCount(of: text) {
                writeMarker(.asciiString, count: count)
                buffer.writeString(text)
            } else {
                writeMarker(.utf16String, count: text.utf16.count)
                for unit in text.utf16 {
                    buffer.writeInteger(unit, endianness: .big)
                }
            }
        }

        /// The smallest form CoreFoundation reads back as the same number:
        /// 1, 2 and 4 bytes are unsigned, 8 bytes signed, 16 bytes signed.
        private mutating func writeInteger(_ number: Int128) {
            switch number {
            case 0...0xFF:
                buffer.writeInteger(UInt8(0x10))
                buffer.writeInteger(UInt8(number))
            case 0...0xFFFF:
                buffer.writeInteger(UInt8(0x11))
                buffer.writeInteger(UInt16(number), endianness: .big)
            case 0...0xFFFF_FFFF:
                buffer.writeInteger(UInt8(0x12))
                buffer.writeInteger(UInt32(number), endianness: .big)
            case Int128(Int64.min)...Int128(Int64.max):
                buffer.writeInteger(UInt8(0x13))
                buffer.writeInteger(Int64(number), endianness: .big)
            default:
                buffer.writeInteger(UInt8(0x14))
                buffer.writeInteger(Int64(truncatingIfNeeded: number >> 64), endianness: .big)
                buffer.writeInteger(UInt64(truncatingIfNeeded: number), endianness: .big)
            }
        }

        private mutating func writeMarker(_ marker: BinaryPropertyListFormat.Marker, count: Int) {
            if count < Int(BinaryPropertyListFormat.extendedCount) {
                buffer.writeInteger(marker.rawValue << 4 | UInt8(count))
            } else {
                buffer.writeInteger(marker.rawValue << 4 | BinaryPropertyListFormat.extendedCount)
                writeInteger(Int128(count))
            }
        }

        private mutating func writeReference(_ object: Int) {
            writeUnsigned(UInt64(object), width: referenceSize)
        }

        private mutating func writeUnsigned(_ value: UInt64, width: Int) {
            switch width {
            case 1: buffer.writeInteger(UInt8(truncatingIfNeeded: value))
            case 2: buffer.writeInteger(UInt16(truncatingIfNeeded: value), endianness: .big)
            case 4: buffer.writeInteger(UInt32(truncatingIfNeeded: value), endianness: .big)
            default: buffer.writeInteger(value, endianness: .big)
            }
        }
    }
}
