/// Why a configuration could not be loaded. Every message names the file or
/// the key path, shows the offending value and says what was expected, so the
/// user can fix the file without reading our code.
public enum ConfigurationError: Error, Hashable, CustomStringConvertible {
    /// The file could not be read; `reason` is the operating system's explanation.
    case unreadableFile(path: String, reason: String)
    /// The file's bytes are not a property list; `reason` is the reader's explanation.
    case notAPropertyList(path: String, reason: String)
    /// The property list's top object is not a dictionary.
    case topLevelNotADictionary(found: String)
    /// A required key is absent.
    case missingKey(ConfigurationKeyPath, expected: String)
    /// A value has the wrong type or an unacceptable content.
    /// `value` is already rendered for display (strings quoted).
    case invalidValue(ConfigurationKeyPath, value: String, expected: String, detail: String? = nil)
    /// A key the server does not know, where unknown keys are not passed through.
    case unknownKey(ConfigurationKeyPath, suggestion: String?, known: [String])
    /// Values that are each fine but do not fit together.
    case inconsistent(ConfigurationKeyPath, detail: String)

    public var description: String {
        switch self {
        case .unreadableFile(let path, let reason):
            return "cannot read configuration file \(path): \(reason)"
        case .notAPropertyList(let path, let reason):
            return "configuration file \(path) is not a property list: \(reason)"
        case .topLevelNotADictionary(let found):
            return "the configuration's top level must be a dictionary, but it is \(found)"
        case .missingKey(let keyPath, let expected):
            return "\(keyPath): missing; expected \(expected)"
        case .invalidValue(let keyPath, let value, let expected, let detail):
            let explanation = detail.map { " (\($0))" } ?? ""
            return "\(keyPath): expected \(expected), got \(value)\(explanation)"
        case .unknownKey(let keyPath, let suggestion, let known):
            let hint = suggestion.map { " (did you mean \($0)?)" } ?? ""
            return "\(keyPath): unknown key\(hint); known keys here: \(known.joined(separator: ", "))"
        case .inconsistent(let keyPath, let detail):
            return "\(keyPath): \(detail)"
        }
    }
}
