import NIOCore

/// Reads XML property lists as Apple's and Python's plistlib writers produce them.
///
/// Strict (anything outside the property-list DTD is an error) and bounded: input is
/// read once, front to back, with an explicit stack of at most `maximumDepth` open
/// containers, so hostile input costs linear time and cannot exhaust the call stack.
/// Nothing expands: there are no entity declarations (a DOCTYPE is skipped), a
/// reference stands for at most 4 bytes, and what is built is charged to a
/// `PropertyListBudget` for the document's length, as the binary reader does.
public enum XMLPropertyListReader {
    /// The deepest nesting of `<dict>` and `<array>` accepted; deeper is `tooComplex`.
    public static var maximumDepth: Int { PropertyListReader.maximumDepth }

    public static func read(_ bytes: UnsafeRawBufferPointer) throws -> PropertyListValue {
        var parser = XMLPropertyListParser(bytes: bytes)
        return try parser.parseDocument()
    }

    public static func read(_ buffer: ByteBuffer) throws -> PropertyListValue {
        try buffer.withUnsafeReadableBytes { try read($0) }
    }

    public static func read(_ bytes: [UInt8]) throws -> PropertyListValue {
        try bytes.withUnsafeBytes { try read($0) }
    }
}

/// The property-list grammar on top of `XMLScanner`.
struct XMLPropertyListParser {
    private var scanner: XMLScanner
    private var budget: PropertyListBudget
    /// Reused for the text of every leaf element, so reading allocates once per document
    /// rather than once per value.
    private var text: [UInt8] = []

    /// A `<dict>` or `<array>` that is open; values are appended as they complete.
    private struct OpenContainer {
        let element: XMLElementName
        let openedAt: Int
        var items: [PropertyListValue] = []
        var entries: [String: PropertyListValue] = [:]
        /// A dictionary's `<key>` whose value has not been read yet.
        var pendingKey: String?
    }

    init(bytes: UnsafeRawBufferPointer) {
        scanner = XMLScanner(bytes: bytes)
        budget = PropertyListBudget(documentLength: bytes.count)
    }

    mutating func parseDocument() throws -> PropertyListValue {
        try scanner.skipProlog()
        guard scanner.peek() == XMLByte.lessThan else {
            throw scanner.malformed(scanner.isAtEnd ? "no <plist> element" : "expected <plist>")
        }
        let root = try scanner.readTag()
        guard root.element == .plist else { throw scanner.malformed("expected <plist>, found \(root.display)", at: root.start) }
        guard root.kind == .open else { throw scanner.malformed("\(root.display) contains no value", at: root.start) }

        let value = try parseValue(insidePlistOpenedAt: root.start)

        let end = try nextTag(inside: "<plist>", openedAt: root.start)
        guard end.kind == .close, end.element == .plist else {
            throw scanner.malformed("expected </plist> after the single root value, found \(end.display)", at: end.start)
        }
        try scanner.skipWhitespaceAndComments()
        guard scanner.isAtEnd else { throw scanner.malformed("unexpected content after </plist>") }
        return value
    }

    /// Skips whitespace and comments, then reads a tag; stray text or the end of the
    /// document there is an error.
    private mutating func nextTag(inside context: String, openedAt start: Int) throws -> XMLTag {
        try scanner.skipWhitespaceAndComments()
        guard let byte = scanner.peek() else {
            throw scanner.malformed("document ended inside \(context) (opened at \(scanner.location(of: start)))")
        }
        guard byte == XMLByte.lessThan else { throw scanner.malformed("unexpected text inside \(context)") }
        return try scanner.readTag()
    }

    /// Reads one value, however deeply nested, without recursion.
    private mutating func parseValue(insidePlistOpenedAt plistStart: Int) throws -> PropertyListValue {
        var open: [OpenContainer] = []
        while true {
            let context = open.last.map { "<\($0.element.rawValue)>" } ?? "<plist>"
            let tag = try nextTag(inside: context, openedAt: open.last?.openedAt ?? plistStart)
            let completed: PropertyListValue

            if tag.kind == .close {
                guard let top = open.last, tag.element == top.element else {
                    throw scanner.malformed("unexpected \(tag.display) inside \(context)", at: tag.start)
                }
                if let key = top.pendingKey {
                    throw scanner.malformed("key \(XMLScanner.quoted(key.utf8)) has no value before \(tag.display)", at: tag.start)
                }
                let finished = open.removeLast()
                completed = finished.element == .dict ? .dictionary(finished.entries) : .array(finished.items)
            } else {
                guard let element = tag.element else {
                    throw scanner.malformed("unknown element \(tag.display)", at: tag.start)
                }
                let top = open.count - 1
                if top >= 0, open[top].element == .dict, open[top].pendingKey == nil {
                    guard element == .key else {
                        throw scanner.malformed("expected <key> before \(tag.display) in <dict>", at: tag.start)
                    }
                    let key = try readString(tag, element: .key)
                    guard open[top].entries[key] == nil else {
                        throw scanner.malformed("duplicate key \(XMLScanner.quoted(key.utf8))", at: tag.start)
                    }
                    open[top].pendingKey = key
                    continue
                }
                switch element {
                case .dict, .array:
                    if tag.kind == .selfClosing {
                        completed = element == .dict ? .dictionary([:]) : .array([])
                    } else {
                        guard open.count < XMLPropertyListReader.maximumDepth else {
                            throw PropertyListError.tooComplex(
                                "XML nesting deeper than \(XMLPropertyListReader.maximumDepth) containers at \(scanner.location(of: tag.start))")
                        }
                        open.append(OpenContainer(element: element, openedAt: tag.start))
                        continue
                    }
                case .key:
                    let problem = top >= 0 && open[top].element == .dict ? "<key> where a value was expected" : "<key> outside a <dict>"
                    throw scanner.malformed(problem, at: tag.start)
                case .plist:
                    throw scanner.malformed("nested <plist>", at: tag.start)
                default:
                    completed = try readScalar(tag, element: element)
                }
            }

            guard !open.isEmpty else { return completed }
            let top = open.count - 1
            try budget.chargeValue()
            // Containers grow by doubling: a value may hold twice its slot, and a
            // dictionary's buckets are at most 3/4 full.
            if let key = open[top].pendingKey {
                try budget.chargeHeap(PropertyListHeapCost.growingDictionaryEntry)
                open[top].entries[key] = completed
                open[top].pendingKey = nil
            } else {
                try budget.chargeHeap(2 * PropertyListHeapCost.valueStride)
                open[top].items.append(completed)
            }
        }
    }

    /// Fills `text` with the content of a leaf element and consumes its end tag.
    private mutating func readLeafText(_ tag: XMLTag, element: XMLElementName) throws {
        text.removeAll(keepingCapacity: true)
        guard tag.kind == .open else { return }  // self-closing: empty content
        try scanner.readText(into: &text, of: element, openedAt: tag.start)
        let end = try scanner.readTag()
        guard end.kind == .close, end.element == element else {
            throw scanner.malformed("expected </\(element.rawValue)>, found \(end.display)", at: end.start)
        }
    }

    private mutating func readString(_ tag: XMLTag, element: XMLElementName) throws -> String {
        try readLeafText(tag, element: element)
        try budget.chargeHeap(PropertyListHeapCost.string(utf8Count: text.count))
        guard let string = String(validating: text, as: UTF8.self) else {
            throw scanner.malformed("invalid UTF-8 in <\(element.rawValue)>", at: tag.start)
        }
        return string
    }

    private mutating func readScalar(_ tag: XMLTag, element: XMLElementName) throws -> PropertyListValue {
        if element == .string {
            return .string(try readString(tag, element: element))
        }
        try readLeafText(tag, element: element)
        let value: PropertyListValue?
        switch element {
        case .true, .false:
            value = text.allSatisfy(XMLByte.isWhitespace) ? .boolean(element == .true) : nil
        case .integer:
            value = XMLPropertyListScalars.integer(text).map { .integer($0) }
        case .real:
            value = XMLPropertyListScalars.real(text).map { .real($0) }
        case .date:
            value = XMLPropertyListScalars.date(text).map { .date($0) }
        case .data:
            // Decoded, then copied into a buffer: both live at once for a moment.
            try budget.chargeHeap(2 * (PropertyListHeapCost.bufferHeader + text.count))
            value = XMLPropertyListScalars.base64(text).map { .data(ByteBuffer(bytes: $0)) }
        case .plist, .dict, .array, .key, .string:
            value = nil  // handled by the caller; unreachable
        }
        guard let value else {
            let shown = XMLScanner.quoted(XMLPropertyListScalars.trimmed(text))
            throw scanner.malformed("invalid <\(element.rawValue)> \(shown)", at: tag.start)
        }
        return value
    }
}
