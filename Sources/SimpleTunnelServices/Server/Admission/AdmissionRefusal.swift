/// Why a connection was turned away or cut off before it became a tunnel;
/// the raw value labels the metric.
public enum AdmissionRefusal: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The peer's address is outside the networks that may connect (`--plaintext-clients`).
    case unlistedAddress = "unlisted_address"
    case tunnelsFull = "tunnels_full"
    case startupsFull = "startups_full"
    case earlyDrop = "early_drop"
    case perAddress = "per_address"
    case tlsHandshakeTimeout = "tls_handshake_timeout"
    case startupTimeout = "startup_timeout"
    /// A listed balancer's connection sent no valid PROXY header in time (`--proxy-protocol-from`).
    case proxyHeader = "proxy_header"
    /// A connection from an address not in `--proxy-protocol-from` started with a PROXY header.
    case untrustedProxyHeader = "untrusted_proxy_header"

    public var description: String {
        switch self {
        case .unlistedAddress: return "the address is not in --plaintext-clients"
        case .tunnelsFull: return "the server serves as many tunnels as it may"
        case .startupsFull: return "too many connections have not finished TLS and login"
        case .earlyDrop: return "dropped early: many connections have not finished TLS and login"
        case .perAddress: return "too many connections from one address have not finished TLS and login"
        case .tlsHandshakeTimeout: return "no TLS handshake in time"
        case .startupTimeout: return "no valid first message (or login) in time"
        case .proxyHeader: return "a balancer in --proxy-protocol-from sent no valid PROXY v2 header in time"
        case .untrustedProxyHeader: return "a PROXY header came from an address not in --proxy-protocol-from"
        }
    }
}
