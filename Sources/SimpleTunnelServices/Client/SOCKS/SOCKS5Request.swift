/// What a SOCKS5 client asked for, once its greeting and request are parsed.
public enum SOCKS5Request: Sendable, Hashable {
    /// Open a TCP connection to the endpoint. The host is an IP literal in
    /// plain text (IPv4-mapped IPv6 as IPv4) or a domain name for the tunnel
    /// server to resolve; names over 253 bytes pass through and are left for
    /// the tunnel to refuse.
    case connect(TunnelEndpoint)
    /// Relay UDP for this client. `clientHint` is where the client says its
    /// datagrams will come from; nil when it sent all zeros (address and
    /// port), meaning it does not know yet.
    case udpAssociate(clientHint: TunnelEndpoint?)
}
