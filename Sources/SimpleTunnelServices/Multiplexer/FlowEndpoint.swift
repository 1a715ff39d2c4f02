import NIOCore

/// The local end of a flow: the real socket whose bytes travel through the
/// tunnel. Implementations live on the tunnel's event loop and report what
/// happens on the socket back to the `TunnelMultiplexer`.
public protocol FlowEndpoint: AnyObject {
    /// Bytes from the peer, for the local socket. `destination` is set for
    /// datagrams (a UDP flow's far end); a stream endpoint ignores it.
    func write(_ data: ByteBuffer, to destination: TunnelEndpoint?)
    func flush()
    /// Starts or stops reading the local socket (backpressure and suspend).
    func setReading(_ enabled: Bool)
    /// Ends the peer-to-local stream: a FIN once everything written has gone.
    func shutdownOutput()
    /// Closes the socket once everything written has gone.
    func close()
    /// Closes the socket now, discarding unsent data: RST for TCP.
    func abort()
    /// IP packets from the peer (IP flows only; others ignore them).
    func writePackets(_ packets: [TunnelPacket])
    /// The flow is forgotten (after `close` or `abort`): report nothing more
    /// to the sink, whose identifier may now name a new flow, and run
    /// `closed` once the socket has really closed (at once if it has).
    func detach(whenClosed closed: @escaping () -> Void)
}

/// What the multiplexer needs of the tunnel connection itself.
public protocol TunnelOutput: AnyObject {
    var isWritable: Bool { get }
    func write(_ message: TunnelMessage)
    func flush()
    /// Whether the peer should be read now: a server stops reading a peer
    /// whose data it cannot place, and TCP holds the peer back meanwhile.
    func peerReadingChanged(_ reading: Bool)
}

/// What a server does with an `open`: connect, bind or lease, then report.
public protocol FlowOpener: AnyObject {
    /// Opens the local end for `request`; calls `completion` exactly once, on
    /// the tunnel's event loop. The endpoint reports to `sink` as `identifier`.
    func open(
        _ request: TunnelOpenRequest,
        identifier: TunnelConnectionIdentifier,
        sink: FlowEventSink,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    )
}

/// A successfully opened local end, with the configuration an IP flow carries.
public struct OpenedFlow {
    public var endpoint: FlowEndpoint
    public var configuration: [String: PropertyListValue]?

    public init(endpoint: FlowEndpoint, configuration: [String: PropertyListValue]? = nil) {
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

extension FlowEndpoint {
    /// IP packets from the peer; only an IP flow's endpoint carries them.
    public func writePackets(_ packets: [TunnelPacket]) {}

    /// Endpoints with nothing to discard close as usual.
    public func abort() { close() }

    /// For endpoints that report nothing once closed (a client's, whose
    /// identifiers are never reused, and the UDP and IP ends, closed at once).
    public func detach(whenClosed closed: @escaping () -> Void) { closed() }
}
