extension DestinationPolicy {
    /// What a server listening on a public (non-loopback) address refuses
    /// unless an Allow address rule opens it: the server's own loopback and
    /// unspecified addresses, link-local networks, and the cloud metadata
    /// services (AWS, GCP and Azure at 169.254.169.254, AWS's IPv6 one at
    /// fd00:ec2::254), which hand out instance credentials to whoever asks.
    public static let publicListenerDefaultDenials: [DestinationRule] = [
        "127.0.0.0/8", "::1", "0.0.0.0/8", "::", "169.254.0.0/16", "fe80::/10", "169.254.169.254", "fd00:ec2::254",
    ].compactMap { try? DestinationRule(parsing: $0) }

    /// This policy with the public-listener denials in force.
    public func withPublicListenerDefaults() -> DestinationPolicy {
        var policy = self
        policy.defaultDenyRules = Self.publicListenerDefaultDenials
        return policy
    }
}
