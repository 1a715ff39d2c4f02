/// Where a value sits in the configuration property list, written the way a
/// user finds it in the file: `IPv4.Routes[1].Netmask`.
public struct ConfigurationKeyPath: Sendable, Hashable, CustomStringConvertible {
    enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    private(set) var components: [Component] = []

    public static let root = ConfigurationKeyPath()

    public func appending(_ key: String) -> ConfigurationKeyPath {
        var copy = self
        copy.components.append(.key(key))
        return copy
    }

    public func appending(index: Int) -> ConfigurationKeyPath {
        var copy = self
        copy.components.append(.index(index))
        return copy
    }

    public var description: String {
        guard !components.isEmpty else { return "(top level)" }
        var text = ""
        for component in components {
            switch component {
            case .key(let key):
                text += text.isEmpty ? key : ".\(key)"
            case .index(let index):
                text += "[\(index)]"
            }
        }
        return text
    }
}
