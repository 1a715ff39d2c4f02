/// Constants of Apple's `bplist00` format, shared by the reader and the writer.
///
/// Layout: the 8-byte magic, the objects, a table of object offsets, and a
/// 32-byte trailer saying how wide offsets and object references are, how
/// many objects there are, which one is the top, and where the table starts.
enum BinaryPropertyListFormat {
    static let magic: [UInt8] = Array("bplist00".utf8)
    static let trailerLength = 32

    /// High nibble of an object's marker byte.
    enum Marker: UInt8 {
        case singleton = 0x0  // null, false, true, fill
        case integer = 0x1
        case real = 0x2
        case date = 0x3
        case data = 0x4
        case asciiString = 0x5
        case utf16String = 0x6
        case uid = 0x8
        case array = 0xA
        case set = 0xC
        case dictionary = 0xD
    }

    static let falseByte: UInt8 = 0x08
    static let trueByte: UInt8 = 0x09
    /// Low nibble meaning "the count follows as an integer object".
    static let extendedCount: UInt8 = 0x0F

    /// The number of UTF-8 bytes of `text`, or nil when one is not ASCII (such
    /// strings are written as UTF-16).
    static func asciiByteCount(of text: String) -> Int? {
        let isASCII =
            text.utf8.withContiguousStorageIfAvailable { bytes in bytes.allSatisfy { $0 < 0x80 } }
            ?? text.utf8.allSatisfy { $0 < 0x80 }
        return isASCII ? text.utf8.count : nil
    }

    /// Bytes needed to hold `value`: 1, 2, 4 or 8 (offsets, references, integers).
    static func byteWidth(of value: UInt64) -> Int {
        switch value {
        case 0...0xFF: return 1
        case 0...0xFFFF: return 2
        case 0...0xFFFF_FFFF: return 4
        default: return 8
        }
    }
}
