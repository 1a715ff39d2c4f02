/// Why bytes could not be read as a property list. On the wire every case ends
/// the tunnel that sent them (PROTOCOL.md B5); in a configuration file the
/// message says what to fix. The associated strings say what was wrong and where.
public enum PropertyListError: Error, Hashable, CustomStringConvertible {
    /// Neither a binary (`bplist00`) nor an XML property list.
    case unrecognizedFormat
    /// A `bplist00` document whose structure is broken.
    case malformedBinary(String)
    /// XML that is not a well-formed property list.
    case malformedXML(String)
    /// Beyond a limit we impose to stay bounded (nesting depth, shared references).
    case tooComplex(String)

    public var description: String {
        switch self {
        case .unrecognizedFormat:
            return "not a property list (neither XML nor binary)"
        case .malformedBinary(let detail):
            return "binary property list: \(detail)"
        case .malformedXML(let detail):
            return "XML property list: \(detail)"
        case .tooComplex(let detail):
            return "property list too complex: \(detail)"
        }
    }
}
