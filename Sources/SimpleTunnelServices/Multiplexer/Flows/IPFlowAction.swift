import NIOCore

/// What one event of an IP flow asks the multiplexer to do.
enum IPFlowAction {
    case none
    /// Packets read from the device with nowhere to go (the flow is not open,
    /// its queue is full): dropped and counted as congestion.
    case dropRead(count: Int)
    /// Packets from the peer for a flow not open: dropped, and logged as a message not valid here.
    case dropFromPeer
    /// This many packets waited too long in the queue and were dropped (`CoDel`):
    /// count them; the flow's turn goes on.
    case dropWaiting(Int)
    /// Write the peer's packets to the device.
    case writeLocal([TunnelPacket])
    /// Send these packets (`bytes` in all, as the queue counted them) to the peer: the flow's turn in the tunnel.
    case send([TunnelPacket], bytes: Int)
    /// Server: answer `success` with the lease's configuration.
    case confirmOpen(configuration: [String: PropertyListValue]?)
    /// Server: answer a failed open (nil: the peer gave the flow up), forget the flow.
    case endFailedOpen(answer: FlowOpenFailure?)
    /// Server: a second `open` for the identifier of a running flow: answer it, keep the flow.
    case refuseDuplicateOpen
    /// Client: the open's completion succeeds with the server's configuration.
    case completeOpen([String: PropertyListValue]?)
    /// Client: the open's completion fails, and the flow is forgotten.
    case failPendingOpen(FlowOpenFailure)
    /// Forget the flow and close its end (the lease goes back, the device stays).
    case forget
    /// Our own mistake, not the peer's: trap in a debug build; in a release
    /// build close the flow at once, log and count it.
    case impossible(ImpossibleFlowEvent)
}
