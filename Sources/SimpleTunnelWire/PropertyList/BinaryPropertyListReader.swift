import NIOCore

/// Reads Apple's binary property lists (`bplist00`) as any peer may write them:
/// integers of 1, 2, 4, 8 and 16 bytes, object references and offsets of any
/// width the trailer declares, ASCII and UTF-16 strings, data of any length,
/// nested containers. `data` values are slices of the input, not copies.
///
/// Untrusted input: every offset and count is checked before use, nesting is
/// limited, and what a document may make us build is bounded
/// (`PropertyListBudget`), so that shared references and overlapping objects
/// cannot expand a small frame into a huge tree. A string referenced more than
/// once is decoded at most twice: the second decode is kept and shared by every
/// later reference (an object referenced once, the usual case, costs nothing extra).
public enum BinaryPropertyListReader {
    public static func read(_ buffer: ByteBuffer) throws -> PropertyListValue {
        try buffer.withUnsafeReadableBytes { bytes in
            var parser = try Parser(bytes: bytes, source: buffer)
            return try parser.readTopObject()
        }
    }

    /// True when the bytes start with the `bplist00` magic.
    static func hasMagic(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let magic = BinaryPropertyListFormat.magic
        guard bytes.count >= magic.count else { return false }
        for index in 0..<magic.count where bytes[index] != magic[index] {
            return false
        }
        return true
    }
}

extension BinaryPropertyListReader {
    fileprivate struct Parser {
        let bytes: UnsafeRawBufferPointer
        /// The buffer `bytes` points into, for slicing out `data` values.
        let source: ByteBuffer
        let offsetSize: Int
        let referenceSize: Int
        let objectCount: Int
        let offsetTableStart: Int
        /// What the document may still cost; see the type's comment.
        var budget: PropertyListBudget
        /// Containers being read; 32-bit, to sit beside `budget`.
        var depth: Int32 = 0
        /// Objects read before, and containers being read (to refuse cycles).
        var marks: ObjectMarks
        /// Heap strings read twice, by object, for every later reference to share.
        var sharedStrings: [Int: String]?
        // Fields above are sized so that the parser is at most 128 bytes: larger,
        // and each of its copies (several per object) is a call to memcpy.

        init(bytes: UnsafeRawBufferPointer, source: ByteBuffer) throws {
            let trailerLength = BinaryPropertyListFormat.trailerLength
            let magicLength = BinaryPropertyListFormat.magic.count
            guard BinaryPropertyListReader.hasMagic(bytes) else {
                throw PropertyListError.unrecognizedFormat
            }
            guard bytes.count >= magicLength + 1 + trailerLength else {
                throw PropertyListError.malformedBinary("\(bytes.count) bytes is too short to hold an object and the trailer")
            }
            let trailer = bytes.count - trailerLength
            let offsetSize = Int(bytes[trailer + 6])
            let referenceSize = Int(bytes[trailer + 7])
            let objectCount = Self.bigEndianUnsigned(bytes, at: trailer + 8, width: 8)
            let topObject = Self.bigEndianUnsigned(bytes, at: trailer + 16, width: 8)
            let tableStart = Self.bigEndianUnsigned(bytes, at: trailer + 24, width: 8)

            guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
                throw PropertyListError.malformedBinary("trailer declares offset width \(offsetSize) and reference width \(referenceSize); each must be 1 to 8")
            }
            // Counts are compared as UInt64 so that huge values cannot overflow Int.
            guard objectCount >= 1, objectCount <= UInt64(bytes.count) else {
                throw PropertyListError.malformedBinary("trailer declares \(objectCount) objects in \(bytes.count) bytes")
            }
            guard topObject < objectCount else {
                throw PropertyListError.malformedBinary("top object \(topObject) is not among the \(objectCount) objects")
            }
            guard tableStart >= UInt64(magicLength + 1), tableStart < UInt64(trailer) else {
                throw PropertyListError.malformedBinary("offset table at \(tableStart) lies outside the objects")
            }
            guard Int(tableStart) + Int(objectCount) * offsetSize <= trailer else {
                throw PropertyListError.malformedBinary("offset table of \(objectCount) entries overruns the trailer")
            }
            self.bytes = bytes
            self.source = source
            self.offsetSize = offsetSize
            self.referenceSize = referenceSize
            self.objectCount = Int(objectCount)
            self.offsetTableStart = Int(tableStart)
            self.budget = PropertyListBudget(documentLength: bytes.count)
            self.marks = ObjectMarks(count: Int(objectCount))
        }

        /// The trailer's top object, checked by `init`; read again rather than
        /// stored, to keep the parser small.
        mutating func readTopObject() throws -> PropertyListValue {
            let trailer = bytes.count - BinaryPropertyListFormat.trailerLength
            return try readObject(Int(Self.bigEndianUnsigned(bytes, at: trailer + 16, width: 8)))
        }

        // MARK: Objects

        private func offset(ofObject index: Int) throws -> Int {
            let offset = Self.bigEndianUnsigned(bytes, at: offsetTableStart + index * offsetSize, width: offsetSize)
            guard offset >= UInt64(BinaryPropertyListFormat.magic.count), offset < UInt64(offsetTableStart) else {
                throw PropertyListError.malformedBinary("object \(index) has offset \(offset), outside the object area")
            }
            return Int(offset)
        }

        private mutating func readObject(_ index: Int) throws -> PropertyListValue {
            try budget.chargeValue()
            let isFirstRead = marks.markSeen(index)
            if !isFirstRead, let shared = sharedStrings?[index] {
                return .string(shared)
            }
            let start = try offset(ofObject: index)
            let marker = bytes[start]
            let low = marker & 0x0F
            guard let kind = BinaryPropertyListFormat.Marker(rawValue: marker >> 4) else {
                throw PropertyListError.malformedBinary("object \(index) has unknown marker 0x\(String(marker, radix: 16))")
            }
            switch kind {
            case .singleton:
                switch marker {
                case BinaryPropertyListFormat.falseByte: return .boolean(false)
                case BinaryPropertyListFormat.trueByte: return .boolean(true)
                default:
                    throw PropertyListError.malformedBinary("object \(index) is an unsupported singleton 0x\(String(marker, radix: 16))")
                }
            case .integer:
                return .integer(try readInteger(at: start, index: index).value)
            case .real:
                return .real(try readReal(widthExponent: low, at: start + 1, index: index))
            case .date:
                guard low == 3 else {
                    throw PropertyListError.malformedBinary("date object \(index) must be 8 bytes")
                }
                return .date(try readReal(widthExponent: 3, at: start + 1, index: index))
            case .data:
                let (count, body) = try readCount(low: low, at: start, index: index)
                try requireBytes(count, at: body, index: index)
                if isFirstRead { try budget.chargeContent(count) }
                guard let slice = source.getSlice(at: source.readerIndex + body, length: count) else {
                    throw PropertyListError.malformedBinary("data object \(index) overruns the document")
                }
                return .data(slice)
            case .asciiString:
                let (count, body) = try readCount(low: low, at: start, index: index)
                try requireBytes(count, at: body, index: index)
                try chargeString(index, encodedBytes: count, utf8Count: count, isFirstRead: isFirstRead)
                let text = UnsafeRawBufferPointer(rebasing: bytes[body..<(body + count)])
                guard !text.contains(where: { $0 >= 0x80 }) else {
                    throw PropertyListError.malformedBinary("ASCII string object \(index) holds a non-ASCII byte")
                }
                return share(String(decoding: text, as: UTF8.self), index, utf8Count: count, isFirstRead: isFirstRead)
            case .utf16String:
                let (count, body) = try readCount(low: low, at: start, index: index)
                let (byteCount, overflow) = count.multipliedReportingOverflow(by: 2)
                guard !overflow else {
                    throw PropertyListError.malformedBinary("UTF-16 string object \(index) is too long")
                }
                try requireBytes(byteCount, at: body, index: index)
                // Three UTF-8 bytes per unit at most (a surrogate pair is four for two units).
                try chargeString(index, encodedBytes: byteCount, utf8Count: 3 * count, isFirstRead: isFirstRead)
                let raw = bytes
                let units = (0..<count).lazy.map { unit in
                    UInt16(raw[body + 2 * unit]) << 8 | UInt16(raw[body + 2 * unit + 1])
                }
                return share(String(decoding: units, as: UTF16.self), index, utf8Count: 3 * count, isFirstRead: isFirstRead)
            case .uid:
                let width = Int(low) + 1
                guard width <= 8 else {
                    throw PropertyListError.malformedBinary("UID object \(index) is \(width) bytes; at most 8 are supported")
                }
                try requireBytes(width, at: start + 1, index: index)
                return .uid(Self.bigEndianUnsigned(bytes, at: start + 1, width: width))
            case .array, .set:
                let (count, body) = try readCount(low: low, at: start, index: index)
                return .array(try readContainer(index) { parser in
                    try parser.requireReferences(count, at: body, index: index)
                    try parser.budget.chargeHeap(PropertyListHeapCost.array(count: count))
                    var elements: [PropertyListValue] = []
                    elements.reserveCapacity(count)
                    for position in 0..<count {
                        let element = try parser.reference(at: body + position * parser.referenceSize)
                        elements.append(try parser.readObject(element))
                    }
                    return elements
                })
            case .dictionary:
                let (count, body) = try readCount(low: low, at: start, index: index)
                return .dictionary(try readContainer(index) { parser in
                    let (referenceCount, overflow) = count.multipliedReportingOverflow(by: 2)
                    guard !overflow else {
                        throw PropertyListError.malformedBinary("dictionary object \(index) is too large")
                    }
                    try parser.requireReferences(referenceCount, at: body, index: index)
                    try parser.budget.chargeHeap(PropertyListHeapCost.dictionary(count: count))
                    var entries: [String: PropertyListValue] = [:]
                    entries.reserveCapacity(count)
                    let valuesStart = body + count * parser.referenceSize
                    for position in 0..<count {
                        let keyObject = try parser.reference(at: body + position * parser.referenceSize)
                        guard case .string(let key) = try parser.readObject(keyObject) else {
                            throw PropertyListError.malformedBinary("dictionary object \(index) has a key that is not a string")
                        }
                        // Keys of up to 15 bytes hash in bounded time; the values limit bounds their number.
                        if key.utf8.count > 15 { try parser.budget.chargeKey(key.utf8.count) }
                        let valueObject = try parser.reference(at: valuesStart + position * parser.referenceSize)
                        entries[key] = try parser.readObject(valueObject)
                    }
                    return entries
                })
            }
        }

        /// Charges a string object before it is decoded: its encoded bytes the
        /// first time it is read, its storage every time it is built.
        @inline(__always)
        private mutating func chargeString(_ index: Int, encodedBytes: Int, utf8Count: Int, isFirstRead: Bool) throws {
            if isFirstRead { try budget.chargeContent(encodedBytes) }
            let storage = PropertyListHeapCost.string(utf8Count: utf8Count)
            guard storage > 0 else { return }  // stored in the String value itself
            // The second build of a heap string is kept in `sharedStrings` too.
            try budget.chargeHeap(isFirstRead ? storage : storage + PropertyListHeapCost.sharedEntry)
        }

        /// A string charged as a heap string (`utf8Count` as `chargeString` was
        /// given it) is kept, when read for the second time, for every later reference.
        private mutating func share(_ string: String, _ index: Int, utf8Count: Int, isFirstRead: Bool) -> PropertyListValue {
            if !isFirstRead, PropertyListHeapCost.string(utf8Count: utf8Count) > 0 {
                if sharedStrings == nil { sharedStrings = [:] }
                sharedStrings?[index] = string
            }
            return .string(string)
        }

        /// Runs `body` for a container object, refusing cycles and excessive depth.
        private mutating func readContainer<Result>(
            _ index: Int,
            _ body: (inout Parser) throws -> Result
        ) throws -> Result {
            guard depth < PropertyListReader.maximumDepth else {
                throw PropertyListError.tooComplex("containers nest deeper than \(PropertyListReader.maximumDepth) levels")
            }
            guard !marks.setOpen(index, true) else {
                throw PropertyListError.malformedBinary("object \(index) contains itself")
            }
            depth += 1
            defer {
                depth -= 1
                _ = marks.setOpen(index, false)
            }
            return try body(&self)
        }

        // MARK: Fields

        /// Reads an integer object at `start`; returns its value and the offset after it.
        private func readInteger(at start: Int, index: Int) throws -> (value: Int128, end: Int) {
            let marker = bytes[start]
            guard marker >> 4 == BinaryPropertyListFormat.Marker.integer.rawValue else {
                throw PropertyListError.malformedBinary("object \(index): expected an integer, found marker 0x\(String(marker, radix: 16))")
            }
            let exponent = marker & 0x0F
            guard exponent <= 4 else {
                throw PropertyListError.malformedBinary("object \(index): integer of 2^\(exponent) bytes is not supported")
            }
            let width = 1 << Int(exponent)
            try requireBytes(width, at: start + 1, index: index)
            let value: Int128
            switch width {
            case 1, 2, 4:
                value = Int128(Self.bigEndianUnsigned(bytes, at: start + 1, width: width))
            case 8:
                value = Int128(Int64(bitPattern: Self.bigEndianUnsigned(bytes, at: start + 1, width: 8)))
            default:
                let high = Int64(bitPattern: Self.bigEndianUnsigned(bytes, at: start + 1, width: 8))
                let low = Self.bigEndianUnsigned(bytes, at: start + 9, width: 8)
                value = Int128(high) << 64 | Int128(low)
            }
            return (value, start + 1 + width)
        }

        private func readReal(widthExponent: UInt8, at body: Int, index: Int) throws -> Double {
            switch widthExponent {
            case 2:
                try requireBytes(4, at: body, index: index)
                return Double(Float(bitPattern: UInt32(Self.bigEndianUnsigned(bytes, at: body, width: 4))))
            case 3:
                try requireBytes(8, at: body, index: index)
                return Double(bitPattern: Self.bigEndianUnsigned(bytes, at: body, width: 8))
            default:
                throw PropertyListError.malformedBinary("object \(index): real of 2^\(widthExponent) bytes is not supported")
            }
        }

        /// The element count in a marker's low nibble, or in the integer object
        /// that follows it; returns the count and where the body starts.
        private func readCount(low: UInt8, at start: Int, index: Int) throws -> (count: Int, body: Int) {
            guard low == BinaryPropertyListFormat.extendedCount else {
                return (Int(low), start + 1)
            }
            try requireBytes(1, at: start + 1, index: index)
            let (value, end) = try readInteger(at: start + 1, index: index)
            guard value >= 0, value <= Int128(bytes.count) else {
                throw PropertyListError.malformedBinary("object \(index) declares \(value) elements")
            }
            return (Int(value), end)
        }

        private func reference(at position: Int) throws -> Int {
            let object = Self.bigEndianUnsigned(bytes, at: position, width: referenceSize)
            guard object < UInt64(objectCount) else {
                throw PropertyListError.malformedBinary("reference to object \(object), but there are \(objectCount)")
            }
            return Int(object)
        }

        private func requireReferences(_ count: Int, at position: Int, index: Int) throws {
            let (length, overflow) = count.multipliedReportingOverflow(by: referenceSize)
            guard !overflow else {
                throw PropertyListError.malformedBinary("object \(index) has too many references")
            }
            try requireBytes(length, at: position, index: index)
        }

        /// Objects must lie before the offset table.
        private func requireBytes(_ count: Int, at position: Int, index: Int) throws {
            guard count >= 0, position <= offsetTableStart, count <= offsetTableStart - position else {
                throw PropertyListError.malformedBinary("object \(index) overruns the object area")
            }
        }

        static func bigEndianUnsigned(_ bytes: UnsafeRawBufferPointer, at position: Int, width: Int) -> UInt64 {
            var value: UInt64 = 0
            for offset in 0..<width {
                value = value << 8 | UInt64(bytes[position + offset])
            }
            return value
        }
    }
}
