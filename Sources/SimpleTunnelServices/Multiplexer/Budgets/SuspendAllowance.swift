/// Data the peer may still send after we asked it to `suspend` a flow, as a
/// value. What a compliant peer had in flight when `suspend` left (its write
/// buffer and both kernels' socket buffers) arrives after it, so each flow gets
/// an allowance (PROTOCOL.md A4 asks for at least 1 MiB), and the tunnel a
/// total over its flows.
///
/// Apple's clients never honour `suspend` (their `Connection.suspend()` does
/// nothing), so going past the allowance is not abuse. A server then stops
/// reading the tunnel, which TCP turns into backpressure on the peer, until
/// the flow's socket has drained; nothing is lost. A client, whose peer is a
/// server that honours `suspend` (ours and Apple's both do), aborts the flow.
///
/// Bytes charged to a flow that is forgotten stay charged until its socket
/// is really closed: they still sit in that socket's buffer.
///
/// Every mutation returns what it changed in `mayReadPeer`, its one output.
struct SuspendAllowance {
    /// What going past the allowance leads to.
    enum Overrun: Equatable {
        /// Server: hold the peer's reads until the socket drains.
        case holdPeer
        /// Client: the flow is closed (type 4).
        case abortFlow
    }

    let perFlow: Int
    let perTunnel: Int
    let overrun: Overrun
    /// Flows we suspended, with the bytes received since.
    private var suspended: [TunnelConnectionIdentifier: Int] = [:]
    /// Sockets of forgotten flows that held such bytes, until they close.
    private var closing: [ObjectIdentifier: Int] = [:]
    /// Bytes past `suspend`, summed over flows, open or closing.
    private(set) var total = 0
    /// Suspended flows past their own allowance.
    private var flowsOver = 0

    init(perFlow: Int, perTunnel: Int, overrun: Overrun) {
        self.perFlow = perFlow
        self.perTunnel = perTunnel
        self.overrun = overrun
    }

    enum Verdict: Equatable {
        case within
        /// Server: stop reading the peer (`mayReadPeer` says when to go on).
        case holdPeer
        /// Client: the flow went past its allowance, or the tunnel past its total.
        case abortFlow(reason: String)
    }

    /// Whether the peer may be read, as far as data past `suspend` goes.
    var mayReadPeer: Bool { flowsOver == 0 && total <= perTunnel }

    /// Always `.noChange`: nothing is charged until data arrives.
    mutating func suspendSent(_ identifier: TunnelConnectionIdentifier) -> OutputChange {
        if suspended[identifier] == nil { suspended[identifier] = 0 }
        return .noChange
    }

    /// The flow's socket drained below its low mark, or closed: what was
    /// received past `suspend` is gone from our buffers.
    mutating func drained(_ identifier: TunnelConnectionIdentifier) -> OutputChange {
        guard let bytes = suspended.removeValue(forKey: identifier) else { return .noChange }
        let before = mayReadPeer
        release(bytes)
        return OutputChange(from: before, to: mayReadPeer)
    }

    /// Data delivered to a flow's socket.
    mutating func charge(_ identifier: TunnelConnectionIdentifier, bytes: Int) -> (verdict: Verdict, readPeer: OutputChange) {
        // Most flows are never suspended: one empty check, no hashing.
        guard !suspended.isEmpty, let index = suspended.index(forKey: identifier) else { return (.within, .noChange) }
        let wasReading = mayReadPeer
        let before = suspended.values[index]
        suspended.values[index] += bytes
        total += bytes
        if before <= perFlow, suspended.values[index] > perFlow { flowsOver += 1 }
        guard !mayReadPeer else { return (.within, .noChange) }
        let change = OutputChange(from: wasReading, to: false)
        switch overrun {
        case .holdPeer:
            return (.holdPeer, change)
        case .abortFlow:
            let reason = suspended.values[index] > perFlow
                ? "the peer kept sending after suspend (\(suspended.values[index]) bytes for this flow)"
                : "the peer kept sending after suspend (\(total) bytes over the tunnel's flows)"
            return (.abortFlow(reason: reason), change)
        }
    }

    /// The flow is forgotten; `closingSocket`, when its socket is still open:
    /// its bytes stay charged until `socketClosed` with the same token.
    mutating func flowForgotten(_ identifier: TunnelConnectionIdentifier, closingSocket: ObjectIdentifier?) -> OutputChange {
        guard let bytes = suspended.removeValue(forKey: identifier) else { return .noChange }
        let before = mayReadPeer
        if bytes > perFlow { flowsOver -= 1 }
        if let closingSocket, bytes > 0 {
            closing[closingSocket, default: 0] += bytes
        } else {
            total -= bytes
        }
        return OutputChange(from: before, to: mayReadPeer)
    }

    /// A forgotten flow's socket finished closing.
    mutating func socketClosed(_ socket: ObjectIdentifier) -> OutputChange {
        guard let bytes = closing.removeValue(forKey: socket) else { return .noChange }
        let before = mayReadPeer
        total -= bytes
        return OutputChange(from: before, to: mayReadPeer)
    }

    private mutating func release(_ bytes: Int) {
        if bytes > perFlow { flowsOver -= 1 }
        total -= bytes
    }
}
