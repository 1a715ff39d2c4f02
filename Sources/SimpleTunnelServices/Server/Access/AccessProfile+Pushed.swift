extension AccessProfile.Pushed {
    /// `configuration` with the groups' routes and DNS in place of its own, for this login's lease.
    func applied(to configuration: TunnelServerConfiguration) -> TunnelServerConfiguration {
        var copy = configuration
        if let routes { copy.routes = routes }
        if let ipv6Routes { copy.ipv6Routes = ipv6Routes }
        if let dns { copy.dns = dns }
        return copy
    }
}
