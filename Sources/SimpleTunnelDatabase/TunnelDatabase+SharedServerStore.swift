import Logging
import SimpleTunnelServices

extension TunnelDatabase: SharedServerStore {
    public var description: String { "\(location)" }

    public var logins: any LoginDirectory { DatabaseLogins(database: self) }

    public func addressLeasing(range: ClosedRange<IPv4Address>?, ipv6Range: ClosedRange<IPv6Address>?) -> any AddressLeasing {
        DatabaseAddressPool(range: range, ipv6Range: ipv6Range, database: self)
    }

    /// What tunnel-server hands the launch as `openSharedStore`: a `postgres://` address and its password.
    public static let opener: SharedServerStoreOpener = { address, passwordFile, environment, logger in
        let location = try DatabaseLocation(parsing: address)
        let password = try DatabasePassword.read(file: passwordFile, environment: environment)
        return TunnelDatabase(location: location, password: password, logger: logger)
    }
}
