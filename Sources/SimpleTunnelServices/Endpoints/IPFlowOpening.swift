import Logging
import NIOCore

/// Opens a tunnel's IP flow: the server's IP layer as `ServerFlowOpener` sees
/// it. Made per tunnel, for the client at the other end, whose lease it is.
public protocol IPFlowOpening {
    func openIPFlow(
        identifier: TunnelConnectionIdentifier, sink: FlowEventSink, eventLoop: EventLoop, logger: Logger
    ) -> Result<OpenedFlow, FlowOpenFailure>
}
