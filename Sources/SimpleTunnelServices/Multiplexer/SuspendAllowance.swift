/// Data the peer may still send after we asked it to `suspend` a flow, as a
/// value. What a compliant peer had in flight when `suspend` left (its write
/// buffer and both kernels' socket buffers) arrives after it, so each flow gets
/// an allowance (PROTOCOL.md A4 asks for at least 1 MiB), and the tunnel a
/// total over its flows. Bytes charged to a flow that closes stay charged until
/// its local socket is really closed: they still sit in that socket's buffer.
struct SuspendAllowance {
    let perFlow: Int
    let perTunnel: Int
    /// Flows we suspended, with the bytes received since.
    private var suspended: [TunnelConnectionIdentifier: Int] = [:]
    /// Flows forgotten while holding such bytes, until their sockets close.
    private var closing: [TunnelConnectionIdentifier: Int] = [:]
    /// Bytes past `suspend`, summed over flows, open or closing.
    private(set) var total = 0

    init(perFlow: Int, perTunnel: Int) {
        self.perFlow = perFlow
        self.perTunnel = perTunnel
    }

    enum Verdict: Equatable {
        case within
        /// The flow went past its allowance.
        case flowExceeded(bytes: Int)
        /// The tunnel went past its total.
        case tunnelExceeded(bytes: Int)
    }

    mutating func suspendSent(_ identifier: TunnelConnectionIdentifier) {
        if suspended[identifier] == nil { suspended[identifier] = 0 }
    }

    mutating func resumeSent(_ identifier: TunnelConnectionIdentifier) {
        total -= suspended.removeValue(forKey: identifier) ?? 0
    }

    /// Data delivered to a flow's socket.
    mutating func charge(_ identifier: TunnelConnectionIdentifier, bytes: Int) -> Verdict {
        // Most flows are never suspended: one empty check, no hashing.
        guard !suspended.isEmpty, let index = suspended.index(forKey: identifier) else { return .within }
        suspended.values[index] += bytes
        total += bytes
        if suspended.values[index] > perFlow { return .flowExceeded(bytes: suspended.values[index]) }
        if total > perTunnel { return .tunnelExceeded(bytes: total) }
        return .within
    }

    /// The flow is forgotten; `socketStillOpen`: its bytes stay charged until `socketClosed`.
    mutating func flowForgotten(_ identifier: TunnelConnectionIdentifier, socketStillOpen: Bool) {
        guard let bytes = suspended.removeValue(forKey: identifier) else { return }
        if socketStillOpen, bytes > 0 {
            closing[identifier, default: 0] += bytes
        } else {
            total -= bytes
        }
    }

    /// A forgotten flow's socket finished closing.
    mutating func socketClosed(_ identifier: TunnelConnectionIdentifier) {
        total -= closing.removeValue(forKey: identifier) ?? 0
    }
}
