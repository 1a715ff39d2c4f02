import Logging
import NIOCore

/// One tunnel's way into the server's IP layer: the layer, and the client
/// whose durable lease an IP flow takes.
struct TunnelIPFlows: IPFlowOpening {
    let layer: ServerIPLayer
    let peer: TunnelPeer

    func openIPFlow(
        identifier: TunnelConnectionIdentifier, offersSuperPackets: Bool, sink: FlowEventSink, eventLoop: EventLoop, logger: Logger,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        layer.open(
            identifier: identifier, peer: peer, offersSuperPackets: offersSuperPackets, sink: sink, eventLoop: eventLoop, logger: logger,
            completion: completion)
    }
}
