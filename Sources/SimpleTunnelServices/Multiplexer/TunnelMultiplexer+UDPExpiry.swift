import NIOCore

extension TunnelMultiplexer {
    /// Closes UDP flows idle for longer than the limit; runs while the tunnel has any.
    func startUDPExpiry() {
        guard udpExpiryTask == nil, !isClosed else { return }
        let interval = TimeAmount.nanoseconds(max(limits.udpIdleTimeout.nanoseconds / 4, TimeAmount.milliseconds(100).nanoseconds))
        udpExpiryTask = eventLoop.assumeIsolated().scheduleTask(in: interval) { [weak self] in
            self?.expireIdleUDPFlows()
        }
    }

    private func expireIdleUDPFlows() {
        udpExpiryTask = nil
        let deadline = NIODeadline.now() - limits.udpIdleTimeout
        let idle = flows.filter { $0.value.kind == .udp && $0.value.isOpen && $0.value.lastActivity < deadline }.keys
        for identifier in idle {
            abort(identifier, reason: "UDP flow idle for \(limits.udpIdleTimeout)")
        }
        if udpFlows > 0 {
            startUDPExpiry()
        }
    }
}
