/// What a multiplexer reports as it works, for whoever counts it (the
/// server's `TunnelServerMetrics`). The multiplexer knows only this protocol,
/// so it names nothing of the layers above it.
public protocol TunnelMultiplexerMetrics: Sendable {
    func flowOpened(_ kind: TunnelFlowKind)
    func flowClosed(_ kind: TunnelFlowKind)
    /// The answer given to a peer's `open`.
    func openResult(_ result: TunnelConnectionOpenResult)
    /// Payload bytes of flows, from the peer and to it.
    func bytesFromPeer(_ count: Int)
    func bytesToPeer(_ count: Int)
    /// IP packets dropped because the tunnel's queue for them was full.
    func packetsDroppedForCongestion(count: Int)
    /// Super-packets too long for the tunnel's turn that did not hold
    /// together when cut into their segments, and were dropped.
    func superPacketsDroppedUncut(count: Int)
    /// A message from the peer that could not be acted on (a bad `host`, a
    /// missing key), dropped or answered as PROTOCOL.md B5 says.
    func malformedMessage()
    /// A flow event only our own mistake could cause (`ImpossibleFlowEvent`).
    func impossibleEvent()
}

extension TunnelMultiplexerMetrics {
    /// Only the server exports this count; others need not keep it.
    public func impossibleEvent() {}
}

/// What a flow carries, as it is counted.
public enum TunnelFlowKind: Sendable, Hashable, CaseIterable {
    case tcp, udp, ip

    init(_ request: TunnelOpenRequest) {
        switch request {
        case .tcp: self = .tcp
        case .udp: self = .udp
        case .ip: self = .ip
        }
    }
}
