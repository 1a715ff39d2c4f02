extension TunnelServerConfiguration {
    /// Loads a configuration file, XML or binary property list.
    ///
    /// - Parameter resolvConf: the text of `/etc/resolv.conf` (see
    ///   `ResolverConfiguration.readSystemResolvConf()`), used when the file
    ///   has no `DNS`; nil leaves DNS as the file has it.
    public static func load(contentsOf path: String, resolvConf: String?) throws(ConfigurationError) -> TunnelServerConfiguration {
        let bytes = try ConfigurationFileReader.contents(ofPath: path)
        let propertyList: PropertyListValue
        do {
            propertyList = try PropertyListReader.read(bytes)
        } catch {
            let reason = (error as? PropertyListError)?.description ?? "\(error)"
            throw .notAPropertyList(path: path, reason: reason)
        }
        return try TunnelServerConfiguration(
            propertyList: propertyList, resolvConf: resolvConf, baseDirectory: directory(of: path)
        )
    }

    /// The folder part of `path`, or nil for a bare file name (relative paths then stay relative to the working directory).
    private static func directory(of path: String) -> String? {
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
