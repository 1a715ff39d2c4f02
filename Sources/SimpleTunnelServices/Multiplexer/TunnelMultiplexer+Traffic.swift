import NIOCore

extension TunnelMultiplexer {
    /// Whether flows may take turns now: the tunnel takes more and no traffic hold is on.
    var mayWriteFlows: Bool { output.isWritable && traffic.holds.sending == nil }

    /// Payload sent to the peer: counted, and a hold on sending when the meter asks for one.
    func meterSent(_ bytes: Int) {
        guard let meter = traffic.meter, let wait = meter.count(bytes, .toPeer, now: .now()), traffic.holds.sending == nil else { return }
        traffic.holds.sending = eventLoop.assumeIsolated().scheduleTask(in: wait) { [weak self] in
            guard let self, !self.isClosed else { return }
            self.traffic.holds.sending = nil
            self.drain()
        }
    }

    /// Payload read from the peer: counted, and the peer not read while the meter asks to wait.
    func meterReceived(_ bytes: Int) {
        guard let meter = traffic.meter, let wait = meter.count(bytes, .fromPeer, now: .now()), traffic.holds.reading == nil else { return }
        traffic.holds.reading = eventLoop.assumeIsolated().scheduleTask(in: wait) { [weak self] in
            guard let self, !self.isClosed else { return }
            self.traffic.holds.reading = nil
            self.apply(self.budgets.trafficHold(reading: false))
        }
        apply(budgets.trafficHold(reading: true))
    }
}

/// The tunnel's traffic meter, if any, and the holds it asked for.
struct TunnelTraffic {
    var meter: (any TunnelTrafficMeter)?
    var holds = TrafficHolds()
}

extension TunnelMultiplexer {
    /// Counts and limits this tunnel's payload (the server's per-login traffic); nil: neither.
    public var trafficMeter: (any TunnelTrafficMeter)? {
        get { traffic.meter }
        set { traffic.meter = newValue }
    }
}
