/// The elements of Apple's property-list DTD, the only ones we accept.
enum XMLElementName: String, CaseIterable, Sendable {
    case plist, dict, array, key, string, integer, real, `true`, `false`, data, date

    init?(_ name: Slice<UnsafeRawBufferPointer>) {
        // Eleven short names: a linear search compares a few bytes and allocates nothing.
        guard let match = Self.allCases.first(where: { $0.rawValue.utf8.elementsEqual(name) }) else {
            return nil
        }
        self = match
    }
}

/// One tag as read from the document; attributes are checked for syntax and dropped,
/// since no plist element gives them a meaning we need.
struct XMLTag {
    enum Kind { case open, close, selfClosing }

    let kind: Kind
    /// Byte offset of the tag's `<`, for error messages.
    let start: Int
    /// `nil` for a name outside the property-list DTD.
    let element: XMLElementName?
    /// The name as written, for error messages only.
    let spelledName: String

    var display: String {
        switch kind {
        case .open: return "<\(spelledName)>"
        case .close: return "</\(spelledName)>"
        case .selfClosing: return "<\(spelledName)/>"
        }
    }
}

/// Byte constants and classes, so the scanner never builds a String per character.
/// (Named for XML so it cannot collide with other byte helpers in the module.)
enum XMLByte {
    static let tab: UInt8 = 0x09
    static let newline: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
    static let space: UInt8 = 0x20
    static let doubleQuote: UInt8 = 0x22
    static let hash: UInt8 = 0x23
    static let ampersand: UInt8 = 0x26
    static let singleQuote: UInt8 = 0x27
    static let plus: UInt8 = 0x2B
    static let minus: UInt8 = 0x2D
    static let dot: UInt8 = 0x2E
    static let zero: UInt8 = 0x30
    static let colon: UInt8 = 0x3A
    static let semicolon: UInt8 = 0x3B
    static let lessThan: UInt8 = 0x3C
    static let equals: UInt8 = 0x3D
    static let greaterThan: UInt8 = 0x3E
    static let openBracket: UInt8 = 0x5B
    static let closeBracket: UInt8 = 0x5D
    static let lowerX: UInt8 = 0x78

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == space || byte == newline || byte == tab || byte == carriageReturn
    }

    /// Letters, digits, `_ : - .` and any non-ASCII byte (names may be UTF-8).
    static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x5F, 0x3A, 0x2D, 0x2E, 0x80...0xFF: return true
        default: return false
        }
    }

    static func digitValue(_ byte: UInt8, radix: UInt32) -> UInt32? {
        let value: UInt32
        switch byte {
        case 0x30...0x39: value = UInt32(byte - 0x30)
        case 0x41...0x46: value = UInt32(byte - 0x41 + 10)
        case 0x61...0x66: value = UInt32(byte - 0x61 + 10)
        default: return nil
        }
        return value < radix ? value : nil
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
    }
}
