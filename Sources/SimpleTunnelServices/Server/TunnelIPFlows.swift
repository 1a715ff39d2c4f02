import Logging
import NIOCore

/// One tunnel's way into the server's IP layer: the layer, and the client
/// whose durable lease an IP flow takes.
struct TunnelIPFlows: IPFlowOpening {
    let layer: ServerIPLayer
    let peer: TunnelPeer

    func openIPFlow(
        reporter: FlowReporter, offersSuperPackets: Bool, eventLoop: EventLoop, logger: Logger,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        layer.open(reporter: reporter, peer: peer, offersSuperPackets: offersSuperPackets, eventLoop: eventLoop, logger: logger, completion: completion)
    }
}
