import Logging
import NIOCore

/// One tunnel's way into the server's IP layer: the layer, and the client
/// whose durable lease an IP flow takes.
struct TunnelIPFlows: IPFlowOpening {
    let layer: ServerIPLayer
    let peer: TunnelPeer
    /// Whose groups' rules its packets meet too, asked per batch by its login.
    var access: ServerAccess?

    func openIPFlow(
        reporter: FlowReporter, offersSuperPackets: Bool, eventLoop: EventLoop, logger: Logger,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        var loginFilter: (@Sendable () -> LoginPacketFilter?)?
        var pushed: AccessProfile.Pushed?
        if let access {
            let peer = self.peer
            loginFilter = { access.packetFilter(for: peer.currentLogin) }
            pushed = access.profile(for: peer.currentLogin).pushed
        }
        layer.open(
            reporter: reporter, peer: peer, offersSuperPackets: offersSuperPackets, eventLoop: eventLoop, logger: logger, loginFilter: loginFilter,
            pushed: pushed, completion: completion)
    }
}
