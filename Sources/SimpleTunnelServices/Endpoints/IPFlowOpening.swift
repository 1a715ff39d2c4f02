import Logging
import NIOCore

/// Opens a tunnel's IP flow: the server's IP layer as `ServerFlowOpener` sees
/// it. Made per tunnel, for the client at the other end, whose lease it is.
/// Answers through `completion`, on `eventLoop`, once the lease is decided
/// (a shared database may take a round trip). `offersSuperPackets`: the
/// client's `open` offered to carry super-packets whole (PROTOCOL.md B8).
public protocol IPFlowOpening {
    func openIPFlow(
        reporter: FlowReporter, offersSuperPackets: Bool, eventLoop: EventLoop, logger: Logger,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    )
}
