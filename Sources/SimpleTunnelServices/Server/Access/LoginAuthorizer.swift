import NIOCore

/// One tunnel's destination rules: the server's (`base`, which a reload
/// replaces) and then those of the groups its login is in now. Asked at each
/// flow's open and each UDP datagram, so a login moved between groups by a
/// reload meets its new rules at its next flow.
struct LoginAuthorizer: DestinationAuthorizer {
    let base: any DestinationAuthorizer
    let access: ServerAccess
    let peer: TunnelPeer

    func refusal(forHost host: String, port: Int) -> String? {
        if let refusal = base.refusal(forHost: host, port: port) { return refusal }
        return access.profile(for: peer.currentLogin).refusal(forHost: host, port: port)
    }

    func refusal(forAddress address: SocketAddress, requestedHost: String) -> String? {
        if let refusal = base.refusal(forAddress: address, requestedHost: requestedHost) { return refusal }
        let profile = access.profile(for: peer.currentLogin)
        guard !profile.policies.isEmpty else { return nil }
        guard let ip = IPAddress(address), let port = address.port else { return "\(address) is not an IP destination" }
        return profile.refusal(forAddress: ip, port: port, requestedHost: requestedHost)
    }
}
