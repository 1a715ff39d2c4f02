extension TunnelServerConfiguration {
    /// Each login's fixed address must be one the server leases (inside its
    /// family's pool) and no other login's: refused with the key path and both
    /// logins, at start and at a reload (which then keeps the old settings).
    func checkFixedAddresses() throws(ConfigurationError) {
        let users = server.access.users
        var owners4: [IPv4Address: String] = [:], owners6: [IPv6Address: String] = [:]
        for login in users.keys.sorted() {
            guard let user = users[login] else { continue }
            let path = ConfigurationKeyPath.root.appending("Server").appending("Users").appending(login)
            if let address = user.ipv4Address {
                let key = path.appending("IPv4Address")
                guard offersIPv4 else {
                    throw .inconsistent(key, detail: "\(address) is an IPv4 address, but the server leases IPv6 only (the file has no IPv4 dictionary)")
                }
                guard pool.contains(address) else {
                    throw .inconsistent(key, detail: "\(address) of login \(login.debugDescription) is outside the IPv4 pool \(pool.lowerBound)-\(pool.upperBound); a fixed address must be one the server leases")
                }
                if let other = owners4[address] {
                    throw .inconsistent(key, detail: "\(address) is the fixed address of both \(other.debugDescription) and \(login.debugDescription); give each login its own")
                }
                owners4[address] = login
            }
            if let address = user.ipv6Address {
                let key = path.appending("IPv6Address")
                guard let ipv6Pool else {
                    throw .inconsistent(key, detail: "\(address) is an IPv6 address, but the server leases no IPv6 (the file has no IPv6.Pool)")
                }
                guard ipv6Pool.contains(address) else {
                    throw .inconsistent(key, detail: "\(address) of login \(login.debugDescription) is outside the IPv6 pool \(ipv6Pool.lowerBound)-\(ipv6Pool.upperBound); a fixed address must be one the server leases")
                }
                if let other = owners6[address] {
                    throw .inconsistent(key, detail: "\(address) is the fixed address of both \(other.debugDescription) and \(login.debugDescription); give each login its own")
                }
                owners6[address] = login
            }
        }
    }
}
