import Logging
import SimpleTunnelServices

extension TunnelDatabase: SharedServerStore {
    public var description: String { "\(location)" }

    public var logins: any LoginDirectory { DatabaseLogins(database: self) }

    public var usageStore: any UsageStore { DatabaseUsage(database: self) }

    /// Away once a probe found no database, until one gets through (`DatabaseHealth`).
    public var unavailability: String? {
        guard health.withLockedValue({ $0.answersAtOnce }) else { return nil }
        let why = lastProbeFailure.withLockedValue { $0 } ?? "no answer"
        return "the database \(location) cannot be reached (\(why)); logins are told to try again later, and it is tried every second"
    }

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
