import NIOCore

/// What one event of a flow asks the multiplexer to do: every `FlowState`
/// event answers with one, and `TunnelMultiplexer.perform` carries out each.
///
/// What follows from the state alone is not an action: whether the local
/// socket is read (the tunnel's budgets have a say too), whether the flow
/// wants a turn in the schedule, and forgetting a flow that is done.
/// `TunnelMultiplexer.reconcile` derives those after every event, so no event
/// can leave a flow paused for good.
enum FlowAction {
    case none
    /// Write the peer's bytes to the local socket.
    case writeLocal(ByteBuffer, to: TunnelEndpoint?)
    /// The peer's bytes with nowhere to go (the stream to the socket already ended): dropped, harmless.
    case drop
    /// Bytes the local socket still read after the flow stopped sending
    /// (the peer ended this stream): dropped, logged at trace level.
    case dropLocalRead(bytes: Int)
    /// Send this to the peer: the flow's turn in the tunnel.
    case send(FlowOutboundQueue.Item)
    /// The local socket cannot take more: ask the peer to stop sending...
    case suspendPeer
    /// ...and to go on once it drains.
    case resumePeer
    /// FIN the local socket once what was written to it has gone.
    case shutdownLocalOutput
    /// Server: answer `success`, write the early data, then FIN the socket if the peer already ended its stream.
    case confirmOpen(early: [ByteBuffer], configuration: [String: PropertyListValue]?, shutdownLocalOutput: Bool)
    /// Server: answer a failed open (nil: the peer gave the flow up and waits for no answer), forget the flow.
    case endFailedOpen(answer: FlowOpenFailure?)
    /// Server: a second `open` for an identifier whose flow still runs: answer it, keep the flow.
    case refuseDuplicateOpen
    /// Client: the open's completion succeeds with the server's configuration, then
    /// the socket gets its FIN if the peer ended its stream before answering.
    case completeOpen([String: PropertyListValue]?, shutdownLocalOutput: Bool)
    /// Client: the open's completion fails, and the flow is forgotten.
    case failPendingOpen(FlowOpenFailure)
    /// Forget the flow and close its socket: after what was written (peer or
    /// local close), or at once, discarding it (`aborting`).
    case forget(aborting: Bool)
    /// Server: a new `open` reuses the identifier of a flow that was closing:
    /// forget it as `forget` does, and say so; the new flow opens after.
    case forgetForNewOpen
    /// The peer broke the protocol for this flow: close it both ways at once
    /// and tell the peer; the tunnel goes on. (What ends a whole tunnel is
    /// found in decoding, and decided by `TunnelMessageDecodingError.disposition`.)
    case peerFault(reason: String)
    /// Our own mistake, not the peer's: trap in a debug build; in a release
    /// build close the flow at once, log and count it.
    case impossible(ImpossibleFlowEvent)
}
