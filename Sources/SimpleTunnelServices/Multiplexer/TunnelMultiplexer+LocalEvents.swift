import Logging
import NIOCore

extension TunnelMultiplexer: FlowEventSink {
    public func flow(_ identifier: TunnelConnectionIdentifier, didRead data: ByteBuffer, from source: TunnelEndpoint?) {
        // A client's TCP flow reads before the server answers and sends up to
        // the early-data allowance at once (PROTOCOL.md A6); NIO may also read
        // a socket to its end when the application half-closes immediately.
        // Whatever exceeds the allowance waits in the queue for the open.
        // Once the peer ended this stream (close read), what the socket still delivers is dropped.
        transition(identifier) { $0.readLocal(data, from: source, now: .now()) }
    }

    public func flow(_ identifier: TunnelConnectionIdentifier, didReadPackets packets: [TunnelPacket]) {
        guard !packets.isEmpty else { return }
        // A super-packet longer than one flow's turn goes as its segments. The
        // turn is a few milliseconds of the link (`LinkPace`), so on a phone's
        // link a 16 KiB super-packet would hold an echo behind it for 13 ms at
        // 10 Mbit/s, and reach the receiver as one packet it acknowledges once,
        // which makes the sender's congestion control send in bursts. On a fast
        // link the turn holds any super-packet and they cross whole.
        var malformed = 0
        let packets = SuperPacket.cut(packets, longerThan: turn, allocator: ByteBufferAllocator(), malformed: &malformed)
        if malformed > 0 { counters.metrics?.superPacketsDroppedUncut(count: malformed) }
        transitionIP(identifier) { $0.readPackets(packets, now: .now()) }
    }

    public func flowDidReadEndOfFile(_ identifier: TunnelConnectionIdentifier) {
        logger.trace("local end of file", metadata: ["flow": "\(identifier)"])
        transition(identifier) { $0.localReadEnded() }
    }

    public func flow(_ identifier: TunnelConnectionIdentifier, writabilityChanged isWritable: Bool) {
        guard let (kind, _) = flows.kind(identifier) else { return }
        guard kind == .stream else { return impossible(identifier, .eventForOtherKind) }
        if isWritable {
            // Drained below its low mark, whether or not a `resume` follows
            // (none after the peer ended its stream): the peer may be read again.
            apply(budgets.suspendDrained(identifier))
        }
        transition(identifier) { $0.localWritabilityChanged(isWritable) }
    }

    public func flowDidClose(_ identifier: TunnelConnectionIdentifier) {
        // A forgotten flow's endpoint reports its close through `detach` instead.
        guard let (kind, _) = flows.kind(identifier) else { return }
        guard kind == .stream else { return impossible(identifier, .eventForOtherKind) }
        logger.trace("local socket closed", metadata: ["flow": "\(identifier)"])
        // The socket is gone: nothing more will be written to or read from it.
        endpoints.removeValue(forKey: identifier)
        apply(budgets.suspendDrained(identifier))
        // Before the server answered, the open fails: its answer will find no flow.
        transition(identifier) { $0.localClosed() }
    }
}
