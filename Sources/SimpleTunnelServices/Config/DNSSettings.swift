/// The `DNS` dictionary sent to clients: resolvers and search domains.
public struct DNSSettings: Sendable, Hashable {
    public var servers: [IPAddress]
    public var searchDomains: [String]
    /// Other keys found in the file's `DNS` dictionary, passed through untouched.
    public var otherKeys: [String: PropertyListValue]

    public init(servers: [IPAddress], searchDomains: [String] = [], otherKeys: [String: PropertyListValue] = [:]) {
        self.servers = servers
        self.searchDomains = searchDomains
        self.otherKeys = otherKeys
    }

    /// The dictionary as a client reads it (`Servers`, and `SearchDomains` when there are any).
    var propertyList: PropertyListValue {
        var dictionary = otherKeys
        dictionary["Servers"] = .array(servers.map { .string($0.description) })
        if !searchDomains.isEmpty {
            dictionary["SearchDomains"] = .array(searchDomains.map { .string($0) })
        }
        return .dictionary(dictionary)
    }
}
