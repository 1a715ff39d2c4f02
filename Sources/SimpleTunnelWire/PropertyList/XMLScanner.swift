/// A forward-only cursor over the raw bytes of an XML document.
///
/// It understands just the XML that property lists use: prolog, comments, tags with
/// attributes, character data with entity and character references, and CDATA. Every
/// loop advances `offset`, so a document is read in time linear in its size.
struct XMLScanner {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { offset >= bytes.count }

    func peek() -> UInt8? {
        offset < bytes.count ? bytes[offset] : nil
    }

    // MARK: Errors

    /// "line L, column C" for a byte offset; computed only when an error is thrown.
    func location(of position: Int) -> String {
        var line = 1
        var lineStart = 0
        var index = 0
        let limit = min(position, bytes.count)
        while index < limit {
            if bytes[index] == XMLByte.newline {
                line += 1
                lineStart = index + 1
            }
            index += 1
        }
        return "line \(line), column \(position - lineStart + 1)"
    }

    func malformed(_ what: String, at position: Int? = nil) -> PropertyListError {
        .malformedXML("\(what) at \(location(of: position ?? offset))")
    }

    /// Input echoed in a message, quoted and capped so a huge key cannot bloat the error.
    static func quoted(_ text: some Collection<UInt8>) -> String {
        let shown = String(decoding: text.prefix(40), as: UTF8.self)
        return "\"\(shown)\(text.count > 40 ? "…" : "")\""
    }

    // MARK: Literals and whitespace

    func hasPrefix(_ literal: StaticString) -> Bool {
        literal.withUTF8Buffer { literalBytes in
            guard bytes.count - offset >= literalBytes.count else { return false }
            for index in 0..<literalBytes.count where bytes[offset + index] != literalBytes[index] {
                return false
            }
            return true
        }
    }

    /// Consumes `literal` if the input continues with it.
    mutating func skip(_ literal: StaticString) -> Bool {
        guard hasPrefix(literal) else { return false }
        // Not `utf8CodeUnitCount`: a one-character literal may be stored as a scalar, where it traps.
        offset += literal.withUTF8Buffer { $0.count }
        return true
    }

    /// Consumes everything up to and including `terminator`.
    mutating func skipPast(_ terminator: StaticString, unterminated what: String, startedAt start: Int) throws {
        while offset < bytes.count {
            if skip(terminator) { return }
            offset += 1
        }
        throw malformed("unterminated \(what)", at: start)
    }

    @discardableResult
    mutating func skipWhitespace() -> Bool {
        let start = offset
        while offset < bytes.count, XMLByte.isWhitespace(bytes[offset]) { offset += 1 }
        return offset > start
    }

    /// Skips whitespace and comments between elements. Stops at anything else, which
    /// the caller then judges (a tag, stray text, or the end).
    mutating func skipWhitespaceAndComments() throws {
        while offset < bytes.count {
            if XMLByte.isWhitespace(bytes[offset]) {
                offset += 1
            } else if hasPrefix("<!--") {
                try skipComment()
            } else {
                return
            }
        }
    }

    private mutating func skipComment() throws {
        let start = offset
        offset += 4  // "<!--"
        try skipPast("-->", unterminated: "comment", startedAt: start)
    }

    /// Skips the byte-order mark, XML declaration, processing instructions, DOCTYPE
    /// and comments that may precede the root element.
    mutating func skipProlog() throws {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
            offset = 3  // UTF-8 byte-order mark
        }
        while true {
            try skipWhitespaceAndComments()
            if hasPrefix("<?") {
                let start = offset
                offset += 2
                try skipPast("?>", unterminated: "XML declaration or processing instruction", startedAt: start)
            } else if hasPrefix("<!DOCTYPE") {
                try skipDoctype()
            } else {
                return
            }
        }
    }

    /// A DOCTYPE ends at the first `>` outside quotes and outside an internal subset `[...]`.
    private mutating func skipDoctype() throws {
        let start = offset
        offset += 9  // "<!DOCTYPE"
        var quote: UInt8? = nil
        var subsetDepth = 0
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == XMLByte.doubleQuote || byte == XMLByte.singleQuote {
                quote = byte
            } else if byte == XMLByte.openBracket {
                subsetDepth += 1
            } else if byte == XMLByte.closeBracket {
                subsetDepth = max(0, subsetDepth - 1)
            } else if byte == XMLByte.greaterThan && subsetDepth == 0 {
                return
            }
        }
        throw malformed("unterminated <!DOCTYPE", at: start)
    }

    // MARK: Tags

    /// Reads a tag; the caller has checked that the input is at `<`.
    mutating func readTag() throws -> XMLTag {
        let start = offset
        offset += 1  // "<"
        let isClose = skip("/")
        let nameStart = offset
        while offset < bytes.count, XMLByte.isNameByte(bytes[offset]) { offset += 1 }
        guard offset > nameStart else {
            throw malformed("expected an element name after '<'", at: start)
        }
        let nameBytes = bytes[nameStart..<offset]
        let element = XMLElementName(nameBytes)
        // Unknown names are echoed in errors; cap them so a huge name cannot bloat a message.
        let spelledName = element?.rawValue ?? String(decoding: nameBytes.prefix(40), as: UTF8.self)

        if isClose {
            skipWhitespace()
            guard skip(">") else { throw malformed("expected '>' to end </\(spelledName)") }
            return XMLTag(kind: .close, start: start, element: element, spelledName: spelledName)
        }
        while true {
            let hadWhitespace = skipWhitespace()
            guard offset < bytes.count else {
                throw malformed("document ended inside tag <\(spelledName)", at: start)
            }
            if skip("/>") {
                return XMLTag(kind: .selfClosing, start: start, element: element, spelledName: spelledName)
            }
            if skip(">") {
                return XMLTag(kind: .open, start: start, element: element, spelledName: spelledName)
            }
            guard hadWhitespace else {
                throw malformed("expected whitespace, '>' or '/>' in tag <\(spelledName)")
            }
            try skipAttribute(in: spelledName)
        }
    }

    /// `name = "value"` or `name = 'value'`.
    private mutating func skipAttribute(in tagName: String) throws {
        let nameStart = offset
        while offset < bytes.count, XMLByte.isNameByte(bytes[offset]) { offset += 1 }
        guard offset > nameStart else { throw malformed("expected an attribute name in tag <\(tagName)") }
        skipWhitespace()
        guard skip("=") else { throw malformed("expected '=' after attribute name in tag <\(tagName)") }
        skipWhitespace()
        guard let quote = peek(), quote == XMLByte.doubleQuote || quote == XMLByte.singleQuote else {
            throw malformed("expected a quoted attribute value in tag <\(tagName)")
        }
        let valueStart = offset
        offset += 1
        while offset < bytes.count, bytes[offset] != quote {
            guard bytes[offset] != XMLByte.lessThan else {
                throw malformed("'<' inside an attribute value in tag <\(tagName)")
            }
            offset += 1
        }
        guard offset < bytes.count else { throw malformed("unterminated attribute value", at: valueStart) }
        offset += 1
    }

    // MARK: Character data

    /// Appends the decoded text of a leaf element to `text`, stopping before the `</`
    /// of its end tag. Entities and CDATA are resolved, comments dropped; the caller
    /// validates the bytes as UTF-8 once the whole text is known.
    mutating func readText(into text: inout [UInt8], of element: XMLElementName, openedAt start: Int) throws {
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == XMLByte.ampersand {
                try appendReference(to: &text)
            } else if byte == XMLByte.carriageReturn {
                // XML reads CR LF and lone CR as LF, so a file saved on Windows reads the same.
                text.append(XMLByte.newline)
                offset += 1
                if peek() == XMLByte.newline { offset += 1 }
            } else if byte != XMLByte.lessThan {
                text.append(byte)
                offset += 1
            } else if hasPrefix("</") {
                return
            } else if hasPrefix("<!--") {
                try skipComment()
            } else if hasPrefix("<![CDATA[") {
                let cdataStart = offset
                offset += 9
                let contentStart = offset
                try skipPast("]]>", unterminated: "CDATA section", startedAt: cdataStart)
                text.append(contentsOf: bytes[contentStart..<(offset - 3)])
            } else {
                throw malformed("unexpected markup inside <\(element.rawValue)>")
            }
        }
        throw malformed("document ended inside <\(element.rawValue)>", at: start)
    }

    /// `&amp;` and friends, `&#NNN;` and `&#xHHH;`.
    private mutating func appendReference(to text: inout [UInt8]) throws {
        let start = offset
        offset += 1  // "&"
        let nameStart = offset
        // The longest valid reference is "&#x10FFFF;"; allow leading zeros but stay bounded.
        while offset < bytes.count, bytes[offset] != XMLByte.semicolon, offset - nameStart < 16 {
            offset += 1
        }
        guard offset < bytes.count, bytes[offset] == XMLByte.semicolon else {
            throw malformed("unterminated or overlong entity reference", at: start)
        }
        let name = bytes[nameStart..<offset]
        offset += 1  // ";"

        switch true {
        case "amp".utf8.elementsEqual(name): text.append(XMLByte.ampersand)
        case "lt".utf8.elementsEqual(name): text.append(XMLByte.lessThan)
        case "gt".utf8.elementsEqual(name): text.append(XMLByte.greaterThan)
        case "quot".utf8.elementsEqual(name): text.append(XMLByte.doubleQuote)
        case "apos".utf8.elementsEqual(name): text.append(XMLByte.singleQuote)
        default:
            guard let scalar = Self.characterReference(name) else {
                throw malformed("unknown entity or invalid character reference &\(String(decoding: name, as: UTF8.self));", at: start)
            }
            UTF8.encode(scalar) { text.append($0) }
        }
    }

    /// The scalar named by `#123` or `#x7B`; nil for malformed digits, NUL, surrogates
    /// and values beyond U+10FFFF.
    private static func characterReference(_ name: Slice<UnsafeRawBufferPointer>) -> Unicode.Scalar? {
        guard name.first == XMLByte.hash else { return nil }
        var digits = name.dropFirst()
        var radix: UInt32 = 10
        if digits.first == XMLByte.lowerX {
            radix = 16
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty else { return nil }
        var value: UInt32 = 0
        for byte in digits {
            guard let digit = XMLByte.digitValue(byte, radix: radix) else { return nil }
            value = value * radix + digit
            guard value <= 0x10FFFF else { return nil }
        }
        guard value != 0 else { return nil }
        return Unicode.Scalar(value)
    }
}
