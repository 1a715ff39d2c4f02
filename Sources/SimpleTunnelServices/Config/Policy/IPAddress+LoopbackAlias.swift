extension IPAddress {
    /// The loopback address a connect() or sendto() to this address reaches
    /// instead of what it spells, or nil when it reaches what it spells.
    ///
    /// Linux routes an unspecified destination to the machine itself:
    /// `0.0.0.0` (and, to be safe, the rest of 0.0.0.0/8) reaches 127.0.0.1,
    /// `::` reaches ::1. The policy judges such a destination as both, so
    /// `Deny 127.0.0.0/8` cannot be sidestepped by writing `0.0.0.0` or `0`.
    /// Call it on an unmapped address: `::ffff:0.0.0.0` is judged as 0.0.0.0.
    var loopbackAlias: IPAddress? {
        switch self {
        case .v4(let address):
            return address.rawValue >> 24 == 0 ? .v4(IPv4Address(127, 0, 0, 1)) : nil
        case .v6(let address):
            return address.isUnspecified ? .v6(IPv6Address(rawValue: 1)) : nil
        }
    }
}
