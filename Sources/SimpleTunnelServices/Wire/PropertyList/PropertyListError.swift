/// Why bytes could not be read as a property list. Every case ends the tunnel
/// that sent them (PROTOCOL.md B5); the message says what was wrong and where.
public enum PropertyListError: Error, Hashable, CustomStringConvertible {
    /// Neither `bplist00` nor an XML property list.
    case unrecognizedFormat
    /// A `bplist00` document whose structure is broken; the string says how.
    case malformedBinary(String)
    /// An XML property list that does not parse; the string says what and where.
    case malformedXML(String)
    /// Nesting deeper, or sharing more, than any real message needs.
    case tooComplex(String)

    public var description: String {
        switch self {
        case .unrecognizedFormat:
            return "not a property list: expected a binary (bplist00) or XML property list"
        case .malformedBinary(let reason):
            return "binary property list is malformed: \(reason)"
        case .malformedXML(let reason):
            return "XML property list is malformed: \(reason)"
        case .tooComplex(let reason):
            return "property list is too complex: \(reason)"
        }
    }
}
