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
    ///
    /// - Parameter serverAddresses: the server's own tunnel addresses. A split
    ///   tunnel's routes gain a host route to each of them and to each pushed
    ///   DNS server they do not cover already, so that its client reaches the
    ///   DNS it is told to use, and the server, through the tunnel (PROTOCOL.md A5).
    public func configuration(
        forLease address: IPv4Address?, ipv6 address6: IPv6Address? = nil, serverAddresses: [IPAddress] = []
    ) -> [String: PropertyListValue] {
        var dictionary = configurationForFetch()
        let hosts = serverAddresses + (dns?.servers ?? [])
        if let address {
            dictionary["IPv4"] = .dictionary(ipv4Dictionary(forLease: address, hosts: hosts))
        }
        if let address6 {
            dictionary["IPv6"] = .dictionary(ipv6Dictionary(forLease: address6, hosts: hosts))
        }
        return dictionary
    }

    /// The routes a split tunnel's client gets: the configured ones, then host routes to `hosts` outside them.
    func splitRoutes(_ routes: [IPv4Network], hosts: [IPAddress]) -> [IPv4Network] {
        var all = routes
        for case .v4(let host) in hosts.map(\.unmapped) where !all.contains(where: { $0.contains(host) }) {
            all.append(IPv4Network(host: host))
        }
        return all
    }

    func splitRoutes(_ routes: [IPv6Network], hosts: [IPAddress]) -> [IPv6Network] {
        var all = routes
        for case .v6(let host) in hosts.map(\.unmapped) where !all.contains(where: { $0.contains(host) }) {
            if let route = IPv6Network(address: host, prefixLength: 128) { all.append(route) }
        }
        return all
    }

    private func ipv4Dictionary(forLease address: IPv4Address, hosts: [IPAddress]) -> [String: PropertyListValue] {
        var ipv4 = otherIPv4Keys
        ipv4["Address"] = .string(address.description)
        ipv4["Netmask"] = .string("255.255.255.255")
        if let routes {
            ipv4["Routes"] = .array(splitRoutes(routes, hosts: hosts).map { route in
                .dictionary([
                    "Address": .string(route.address.description),
                    "Netmask": .string(route.netmask.description),
                ])
            })
        }
        return ipv4
    }

    private func ipv6Dictionary(forLease address: IPv6Address, hosts: [IPAddress]) -> [String: PropertyListValue] {
        var ipv6 = otherIPv6Keys
        ipv6["Address"] = .string(address.description)
        ipv6["PrefixLength"] = .integer(128)
        if let ipv6Routes {
            ipv6["Routes"] = .array(splitRoutes(ipv6Routes, hosts: hosts).map { route in
                .dictionary(["Address": .string(route.address.description), "PrefixLength": .integer(Int128(route.prefixLength))])
            })
        }
        return ipv6
    }
}
