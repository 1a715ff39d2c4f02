import NIOCore
@testable import SimpleTunnelServices

/// Binary property lists built to make a reader expand a small document: shared
/// references, aliased and overlapping objects, wide and deep containers. Each
/// fills (about) `length` bytes, so the same shape can be tried at any frame size.
enum HostilePropertyLists {
    /// The largest property list a frame carries.
    static let maximumLength = TunnelWireLimits.maximumFrameLength - TunnelWireLimits.lengthPrefixSize

    /// Objects and offsets laid out as a writer would, with the narrowest widths that fit.
    static func document(_ objects: [[UInt8]], offsets: [Int]? = nil, top: Int = 0) -> ByteBuffer {
        var builder = BinaryPropertyListBuilder()
        builder.objects = objects
        let area = 8 + objects.reduce(0) { $0 + $1.count }
        builder.offsetSize = width(of: area)
        builder.referenceSize = width(of: offsets?.count ?? objects.count)
        builder.topObject = UInt64(top)
        if let offsets {
            builder.objectCountOverride = UInt64(offsets.count)
            var built = builder.build()
            // Rewrite the table: it may name any offsets, more of them than there are objects.
            let tableStart = area
            built.moveWriterIndex(to: tableStart)
            for offset in offsets { built.writeBytes(builder.bigEndian(UInt64(offset), width: builder.offsetSize)) }
            built.writeBytes([0, 0, 0, 0, 0, 0, UInt8(builder.offsetSize), UInt8(builder.referenceSize)])
            built.writeBytes(builder.bigEndian(UInt64(offsets.count), width: 8))
            built.writeBytes(builder.bigEndian(UInt64(top), width: 8))
            built.writeBytes(builder.bigEndian(UInt64(tableStart), width: 8))
            return built
        }
        return builder.build()
    }

    static func width(of count: Int) -> Int {
        count < 1 << 8 ? 1 : count < 1 << 16 ? 2 : count < 1 << 24 ? 3 : 4
    }

    static func references(_ objects: [Int], width: Int) -> [UInt8] {
        let builder = BinaryPropertyListBuilder()
        return objects.flatMap { builder.bigEndian(UInt64($0), width: width) }
    }

    /// A marker with its count: in the low nibble, or as a following integer.
    static func header(_ marker: UInt8, count: Int) -> [UInt8] {
        if count < 15 { return [marker << 4 | UInt8(count)] }
        let builder = BinaryPropertyListBuilder()
        let exponent: UInt8 = count < 1 << 8 ? 0 : count < 1 << 16 ? 1 : 2
        return [marker << 4 | 0x0F, 0x10 | exponent] + builder.bigEndian(UInt64(count), width: 1 << Int(exponent))
    }

    static func asciiString(_ count: Int) -> [UInt8] {
        header(0x5, count: count) + [UInt8](repeating: UInt8(ascii: "x"), count: count)
    }

    /// `arrays` arrays, each referring `count` times to one string of `stringLength`
    /// bytes, inside one top array: the shape that took a server to 1.59 GB.
    static func nestedArraysSharingOneString(arrays: Int, count: Int, stringLength: Int) -> ByteBuffer {
        let objectCount = arrays + 2
        let width = width(of: objectCount)
        let string = objectCount - 1
        var objects = [header(0xA, count: arrays) + references(Array(1...arrays), width: width)]
        for _ in 0..<arrays {
            objects.append(header(0xA, count: count) + references(Array(repeating: string, count: count), width: width))
        }
        objects.append(asciiString(stringLength))
        return document(objects)
    }

    /// The same shape sized to fill `length` bytes, half of them the string.
    static func nestedArraysSharingOneString(length: Int) -> ByteBuffer {
        let stringLength = length / 2
        let references = (length - stringLength - 64) / 2  // two-byte references at worst
        return nestedArraysSharingOneString(arrays: 16, count: references / 16, stringLength: stringLength)
    }

    /// Every entry of the offset table points at one long string: distinct
    /// objects, so remembering objects by number would not share them.
    static func aliasedOffsets(length: Int) -> ByteBuffer {
        let stringLength = length / 2
        let entries = (length - stringLength - 64) / 5  // three-byte offsets, two-byte references
        let top = header(0xA, count: entries) + references(Array(1...entries), width: width(of: entries + 1))
        let stringOffset = 8 + top.count
        return document([top, asciiString(stringLength)], offsets: [8] + Array(repeating: stringOffset, count: entries))
    }

    /// Strings that start every 4 bytes and all run to the end of one region:
    /// each byte of it is read by a quarter of the objects.
    static func overlappingStrings(length: Int) -> ByteBuffer {
        let starts = (length - 64) / 12  // 4 bytes of region, 3 of offset, 2 of reference each
        let region = 4 * starts
        let topCount = starts
        let top = header(0xA, count: topCount) + references(Array(1...topCount), width: width(of: topCount + 1))
        let regionStart = 8 + top.count
        var bytes: [UInt8] = []
        for start in 0..<starts {
            let remaining = region - 4 * start - 4
            // "_" is an ASCII string with a 2-byte count: the body is the rest of the region.
            bytes += [UInt8(ascii: "_"), 0x11, UInt8(remaining >> 8 & 0x7F), UInt8(remaining & 0x7F)]
        }
        let offsets = [8] + (0..<starts).map { regionStart + 4 * $0 }
        return document([top, bytes], offsets: offsets)
    }

    /// One array of one-byte references, all to `true`: 32 bytes of values per byte.
    static func wideArrayOfOneObject(length: Int) -> ByteBuffer {
        let count = length - 64
        return document([header(0xA, count: count) + [UInt8](repeating: 1, count: count), [0x09]])
    }

    /// A dictionary whose every key is one long string.
    static func dictionaryWithOneLongKey(entries: Int, keyLength: Int) -> ByteBuffer {
        let dictionary = header(0xD, count: entries) + [UInt8](repeating: 1, count: entries) + [UInt8](repeating: 2, count: entries)
        return document([dictionary, asciiString(keyLength), [0x09]])
    }

    /// A dictionary of `count` distinct two-letter-or-longer keys, all to `true`.
    static func wideDictionary(length: Int) -> ByteBuffer {
        let count = (length - 64) / 11  // key object 3-4, offset 3, two references of 2
        let width = width(of: count + 2)
        let keys = (0..<count).map { index -> [UInt8] in
            let name = Array(String(index, radix: 36).utf8)
            return header(0x5, count: name.count) + name
        }
        let dictionary = header(0xD, count: count) + references(Array(2..<(count + 2)), width: width)
            + references(Array(repeating: 1, count: count), width: width)
        return document([dictionary, [0x09]] + keys)
    }

    /// Each array refers to the next twice: 2^depth values from depth objects.
    static func exponentialSharing(depth: Int) -> ByteBuffer {
        document((0..<depth).map { [0xA2, UInt8($0 + 1), UInt8($0 + 1)] } + [[0x10, 1]])
    }

    /// A string of UTF-16 units that each take 3 bytes in UTF-8.
    static func wideCharacterString(length: Int) -> ByteBuffer {
        let units = (length - 64) / 2
        var body: [UInt8] = []
        for _ in 0..<units { body += [0x4E, 0x2D] }  // U+4E2D
        return document([header(0x6, count: units) + body])
    }

    /// Every shape at (about) `length` bytes, by name.
    static func all(length: Int) -> [(String, ByteBuffer)] {
        [
            ("nested arrays sharing one string", nestedArraysSharingOneString(length: length)),
            ("aliased offsets", aliasedOffsets(length: length)),
            ("overlapping strings", overlappingStrings(length: length)),
            ("wide array of one object", wideArrayOfOneObject(length: length)),
            ("dictionary with one long key", dictionaryWithOneLongKey(entries: min(200, length / 8), keyLength: length / 2)),
            ("wide dictionary", wideDictionary(length: length)),
            ("exponential sharing", exponentialSharing(depth: 60)),
            ("wide characters", wideCharacterString(length: length)),
        ]
    }
}
