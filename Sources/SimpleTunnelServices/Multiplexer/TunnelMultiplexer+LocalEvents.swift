import Logging
import NIOCore

extension TunnelMultiplexer: FlowEventSink {
    public func flow(_ identifier: TunnelConnectionIdentifier, didRead data: ByteBuffer, from source: TunnelEndpoint?) {
        // A client's TCP flow reads before the server answers and sends up to
        // the early-data allowance at once (PROTOCOL.md A6); NIO may also read
        // a socket to its end when the application half-closes immediately.
        // Whatever exceeds the allowance waits in the queue for the open.
        if transition(identifier, { $0.readLocal(data, from: source, now: .now()) }) == false {
            // The peer ended this stream (close read): what the socket still delivers has nowhere to go.
            logger.trace("dropped local data for a flow that no longer sends", metadata: ["flow": "\(identifier)", "bytes": "\(data.readableBytes)"])
        }
    }

    public func flow(_ identifier: TunnelConnectionIdentifier, didReadPackets packets: [TunnelPacket]) {
        guard !packets.isEmpty else { return }
        if transition(identifier, { $0.readPackets(packets, now: .now()) }) == false {
            counters.metrics?.packetsDroppedForCongestion(count: packets.count)
        }
    }

    public func flowDidReadEndOfFile(_ identifier: TunnelConnectionIdentifier) {
        let queuedClose = transition(identifier) { $0.localReadEnded() }
        logger.trace("local end of file", metadata: ["flow": "\(identifier)", "close-queued": "\(queuedClose ?? false)"])
    }

    public func flow(_ identifier: TunnelConnectionIdentifier, writabilityChanged isWritable: Bool) {
        transition(identifier, { $0.localWritabilityChanged(isWritable) }) { command in
            if isWritable {
                // Drained below its low mark, whether or not a `resume` follows
                // (none after the peer ended its stream): the peer may be read again.
                budgets.suspendAllowance.drained(identifier)
                suspendAllowanceChanged()
            }
            switch command {
            case .suspend?:
                budgets.suspendAllowance.suspendSent(identifier)
                sendControl(.suspend(identifier: identifier))
            case .resume?:
                sendControl(.resume(identifier: identifier))
            default:
                break
            }
        }
    }

    public func flowDidClose(_ identifier: TunnelConnectionIdentifier) {
        // A forgotten flow's endpoint reports its close through `detach` instead.
        guard flows[identifier] != nil else { return }
        logger.trace("local socket closed", metadata: ["flow": "\(identifier)"])
        // The socket is gone: nothing more will be written to or read from it.
        endpoints.removeValue(forKey: identifier)
        budgets.suspendAllowance.drained(identifier)
        suspendAllowanceChanged()
        transition(identifier, { $0.localClosed() }) { effect in
            if effect == .failPendingOpen {
                // The local side gave up first; the server's answer will find no flow.
                failPendingOpen(identifier, FlowOpenFailure(.internalError, "the local connection closed"))
            }
        }
    }
}
