import NIOCore

/// One SimpleTunnel message, typed: a case per command with the fields that
/// command carries (PROTOCOL.md A3, B2). Convert to and from the wire with
/// `init(propertyList:)` and `propertyListEntries`.
public enum TunnelMessage: Sendable, Hashable {
    /// Stream bytes, or one datagram; a UDP datagram names its far end.
    case data(identifier: TunnelConnectionIdentifier, payload: ByteBuffer, endpoint: TunnelEndpoint? = nil)
    case suspend(identifier: TunnelConnectionIdentifier)
    case resume(identifier: TunnelConnectionIdentifier)
    case close(identifier: TunnelConnectionIdentifier, direction: TunnelConnectionCloseDirection)
    /// A DNS query (client) or answer (server, with the resolver it came from).
    case dns(identifier: TunnelConnectionIdentifier, packet: ByteBuffer, source: String? = nil)
    case open(identifier: TunnelConnectionIdentifier, request: TunnelOpenRequest)
    case openResult(
        identifier: TunnelConnectionIdentifier, result: TunnelConnectionOpenResult, configuration: [String: PropertyListValue]? = nil,
        detail: TunnelOpenResultDetail? = nil)
    case packets(identifier: TunnelConnectionIdentifier, packets: [TunnelPacket])
    /// A request (no configuration) or its reply.
    case fetchConfiguration(identifier: TunnelConnectionIdentifier, configuration: [String: PropertyListValue]? = nil)
    /// `offersRetryLater`: the sender takes result 4 (timeout) as "the server cannot check logins now" (PROTOCOL.md B2).
    case authenticate(login: String, password: String, offersRetryLater: Bool = false)
    /// `detail`: why a login was refused, beside result 3 (ours, PROTOCOL.md B2).
    case authenticateResult(TunnelConnectionOpenResult, detail: TunnelLoginRefusalDetail? = nil)

    public var command: TunnelCommand {
        switch self {
        case .data: return .data
        case .suspend: return .suspend
        case .resume: return .resume
        case .close: return .close
        case .dns: return .dns
        case .open: return .open
        case .openResult: return .openResult
        case .packets: return .packets
        case .fetchConfiguration: return .fetchConfiguration
        case .authenticate: return .authenticate
        case .authenticateResult: return .authenticateResult
        }
    }

    /// The logical connection; 0 for tunnel-level messages.
    public var identifier: TunnelConnectionIdentifier {
        switch self {
        case .data(let identifier, _, _), .suspend(let identifier), .resume(let identifier),
            .close(let identifier, _), .dns(let identifier, _, _), .open(let identifier, _),
            .openResult(let identifier, _, _, _), .packets(let identifier, _),
            .fetchConfiguration(let identifier, _):
            return identifier
        case .authenticate, .authenticateResult:
            return 0
        }
    }
}

/// What an `open` asks for.
public enum TunnelOpenRequest: Sendable, Hashable {
    /// An app-layer TCP flow to a destination.
    case tcp(TunnelEndpoint)
    /// An app-layer UDP flow; each datagram names its destination.
    case udp
    /// An IP-layer connection: lease an address and carry packets. A Linux
    /// peer may offer to carry TCP super-packets whole (PROTOCOL.md B8).
    case ip(offersSuperPackets: Bool)

    /// An IP flow as Apple's client opens it: packets no larger than the MTU.
    public static let plainIP = TunnelOpenRequest.ip(offersSuperPackets: false)
}
