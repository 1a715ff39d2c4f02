extension TunnelServerConfiguration {
    /// The reply to `fetchConfiguration`: the client keys without `IPv4`
    /// (PROTOCOL.md A5). Never contains `Pool` or `Server`.
    public func configurationForFetch() -> [String: PropertyListValue] {
        var dictionary = passThroughKeys
        if let dns, !dns.servers.isEmpty {
            dictionary["DNS"] = dns.propertyList
        }
        return dictionary
    }

    /// The `configuration` of a successful IP-flow `openResult`: the client
    /// keys with `IPv4` holding the leased `Address`, `Netmask`
    /// 255.255.255.255 and the `Routes`, if any, and with an IPv6 lease `IPv6`
    /// holding its `Address`, `PrefixLength` 128 and `Routes` (PROTOCOL.md B7).
    /// Never contains `Pool` or `Server`.
    public func configuration(forLease address: IPv4Address?, ipv6 address6: IPv6Address? = nil) -> [String: PropertyListValue] {
        var dictionary = configurationForFetch()
        if let address {
            dictionary["IPv4"] = .dictionary(ipv4Dictionary(forLease: address))
        }
        if let address6 {
            dictionary["IPv6"] = .dictionary(ipv6Dictionary(forLease: address6))
        }
        return dictionary
    }

    private func ipv4Dictionary(forLease address: IPv4Address) -> [String: PropertyListValue] {
        var ipv4 = otherIPv4Keys
        ipv4["Address"] = .string(address.description)
        ipv4["Netmask"] = .string("255.255.255.255")
        if let routes {
            ipv4["Routes"] = .array(routes.map { route in
                .dictionary([
                    "Address": .string(route.address.description),
                    "Netmask": .string(route.netmask.description),
                ])
            })
        }
        return ipv4
    }

    private func ipv6Dictionary(forLease address: IPv6Address) -> [String: PropertyListValue] {
        var ipv6 = otherIPv6Keys
        ipv6["Address"] = .string(address.description)
        ipv6["PrefixLength"] = .integer(128)
        if let ipv6Routes {
            ipv6["Routes"] = .array(ipv6Routes.map { route in
                .dictionary(["Address": .string(route.address.description), "PrefixLength": .integer(Int128(route.prefixLength))])
            })
        }
        return ipv6
    }
}
