import NIOCore

extension TunnelMultiplexer {
    /// Closes UDP flows idle for longer than the limit; runs while the tunnel has any.
    func startUDPExpiry() {
        guard udp.expiry == nil, !isClosed else { return }
        let interval = TimeAmount.nanoseconds(max(limits.udpIdleTimeout.nanoseconds / 4, TimeAmount.milliseconds(100).nanoseconds))
        udp.expiry = eventLoop.assumeIsolated().scheduleTask(in: interval) { [weak self] in
            self?.expireIdleUDPFlows()
        }
    }

    private func expireIdleUDPFlows() {
        udp.expiry = nil
        let deadline = NIODeadline.now() - limits.udpIdleTimeout
        var idle: [TunnelConnectionIdentifier] = []
        for case (let identifier, .stream(let flow)) in flows.entries where flow.kind == .udp && flow.isOpen && flow.lastActivity < deadline {
            idle.append(identifier)
        }
        for identifier in idle {
            abort(identifier, reason: "UDP flow idle for \(limits.udpIdleTimeout)")
        }
        if udp.count > 0 {
            startUDPExpiry()
        }
    }
}
