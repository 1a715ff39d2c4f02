import NIOCore

/// The local end of a flow: the real socket (or device) whose traffic goes
/// through the tunnel. Implementations live on the tunnel's event loop and
/// report what happens to them through the `FlowReporter` they were made with.
/// What each kind can do is its own protocol, so no kind stubs what it lacks;
/// `LocalFlowEnd` tells the multiplexer which one a flow has.
public protocol FlowEndpoint: AnyObject {
    /// Closes the local end once everything written has gone; it reports nothing more after.
    func close()
}

/// A TCP or UDP flow's local end: bytes (or datagrams) both ways, read only on demand.
public protocol DataFlowEndpoint: FlowEndpoint {
    /// Bytes from the peer, for the local socket. `destination` is set for
    /// datagrams (a UDP flow's far end); a stream endpoint ignores it.
    func write(_ data: ByteBuffer, to destination: TunnelEndpoint?)
    func flush()
    /// Starts or stops taking what the local side sends (backpressure and suspend).
    func setReading(_ enabled: Bool)
}

/// A TCP flow's local end: a byte stream, which ends one way at a time, can be
/// reset, and takes time to close.
public protocol TCPFlowEndpoint: DataFlowEndpoint {
    /// Ends the peer-to-local stream: a FIN once everything written has gone.
    func shutdownOutput()
    /// Closes the socket now, discarding unsent data: RST.
    func abort()
    /// The flow is forgotten (after `close` or `abort`): report nothing more,
    /// as the identifier may now name a new flow, and run `closed` once the
    /// socket has really closed (at once if it has).
    func detach(whenClosed closed: @escaping () -> Void)
}

/// An IP flow's local end: packets from the peer.
public protocol PacketFlowEndpoint: FlowEndpoint {
    func writePackets(_ packets: [TunnelPacket])
}

/// A flow's local end by what it carries: the multiplexer calls on it only
/// what that kind has.
public enum LocalFlowEnd {
    case tcp(any TCPFlowEndpoint)
    case udp(any DataFlowEndpoint)
    case ip(any PacketFlowEndpoint)

    var kind: TunnelFlowKind {
        switch self {
        case .tcp: .tcp
        case .udp: .udp
        case .ip: .ip
        }
    }

    /// The end that takes bytes: a TCP or UDP flow's.
    var data: (any DataFlowEndpoint)? {
        switch self {
        case .tcp(let endpoint): endpoint
        case .udp(let endpoint): endpoint
        case .ip: nil
        }
    }

    /// Closes the end after what was written, or at once when `aborting` (a TCP
    /// socket is reset; the others have nothing to discard); `closed` runs once
    /// it has really closed, and from then on it reports nothing.
    func close(aborting: Bool, whenClosed closed: @escaping () -> Void) {
        switch self {
        case .tcp(let endpoint):
            if aborting { endpoint.abort() } else { endpoint.close() }
            endpoint.detach(whenClosed: closed)
        case .udp(let endpoint):
            // Its sockets (or its share of one) close at once.
            endpoint.close()
            closed()
        case .ip(let endpoint):
            endpoint.close()
            closed()
        }
    }

    var object: ObjectIdentifier {
        switch self {
        case .tcp(let endpoint): ObjectIdentifier(endpoint)
        case .udp(let endpoint): ObjectIdentifier(endpoint)
        case .ip(let endpoint): ObjectIdentifier(endpoint)
        }
    }
}

/// What the multiplexer needs of the tunnel connection itself.
public protocol TunnelOutput: AnyObject {
    var isWritable: Bool { get }
    /// While writable, about how many bytes may be written before it is not:
    /// a slow link's room (`LinkQueueGate`); unbounded where only `isWritable` says.
    var writableBytes: Int { get }
    func write(_ message: TunnelMessage)
    func flush()
    /// Whether the peer should be read now: a server stops reading a peer
    /// whose data it cannot place, and TCP holds the peer back meanwhile.
    func peerReadingChanged(_ reading: Bool)
}

extension TunnelOutput {
    public var writableBytes: Int { .max }
}

/// What a server does with an `open`: connect, bind or lease, then report.
public protocol FlowOpener: AnyObject {
    /// Opens the local end for `request`, made with `reporter`; calls
    /// `completion` exactly once, on the tunnel's event loop.
    func open(
        _ request: TunnelOpenRequest,
        reporter: FlowReporter,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    )
}

/// A successfully opened local end, with the configuration an IP flow carries.
public struct OpenedFlow {
    public var endpoint: LocalFlowEnd
    public var configuration: [String: PropertyListValue]?

    public init(endpoint: LocalFlowEnd, configuration: [String: PropertyListValue]? = nil) {
        self.endpoint = endpoint
        self.configuration = configuration
    }
}

/// Why an open failed, as the result code the peer gets and a reason for logs.
public struct FlowOpenFailure: Error, CustomStringConvertible {
    public var result: TunnelConnectionOpenResult
    public var reason: String
    /// Sent beside the result by our server (PROTOCOL.md B6).
    public var detail: TunnelOpenResultDetail?

    public init(_ result: TunnelConnectionOpenResult, _ reason: String, detail: TunnelOpenResultDetail? = nil) {
        self.result = result
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(result) (\(reason))" }
}

/// How endpoints report socket events; implemented by `TunnelMultiplexer`.
public protocol FlowEventSink: AnyObject {
    /// Bytes read from the local socket; `source` is a datagram's sender.
    func flow(_ identifier: TunnelConnectionIdentifier, didRead data: ByteBuffer, from source: TunnelEndpoint?)
    /// The local socket's input ended (FIN).
    func flowDidReadEndOfFile(_ identifier: TunnelConnectionIdentifier)
    /// The local socket's write buffer filled up or drained.
    func flow(_ identifier: TunnelConnectionIdentifier, writabilityChanged isWritable: Bool)
    /// The local socket is closed entirely.
    func flowDidClose(_ identifier: TunnelConnectionIdentifier)
    /// IP packets read from an IP flow's device, for the peer.
    func flow(_ identifier: TunnelConnectionIdentifier, didReadPackets packets: [TunnelPacket])
}
