/// Why a property list could not be read.
///
/// The associated strings carry the detail (what went wrong and where), so that a
/// configuration error can be fixed from the message alone.
public enum PropertyListError: Error, Hashable, CustomStringConvertible {
    /// The document is neither an XML nor a binary property list.
    case unrecognizedFormat
    /// The XML is not a well-formed property list; the string says what and where.
    case malformedXML(String)
    /// The document exceeds a limit we impose to stay bounded (for example nesting depth).
    case tooComplex(String)

    public var description: String {
        switch self {
        case .unrecognizedFormat:
            return "not a property list (neither XML nor binary)"
        case .malformedXML(let detail):
            return "XML property list: \(detail)"
        case .tooComplex(let detail):
            return "property list too complex: \(detail)"
        }
    }
}
