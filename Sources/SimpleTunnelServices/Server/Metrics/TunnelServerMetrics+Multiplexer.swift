/// The server counts what its tunnels' multiplexers report.
extension TunnelServerMetrics: TunnelMultiplexerMetrics {
    public func bytesFromPeer(_ count: Int) { bytesFromClients.increment(by: count) }
    public func bytesToPeer(_ count: Int) { bytesToClients.increment(by: count) }
    public func packetsDroppedForCongestion(count: Int) { droppedPackets(.congested, count: count) }
    public func superPacketsDroppedUncut(count: Int) { droppedPackets(.uncutSuperPacket, count: count) }
    public func malformedMessage() { malformedMessages.increment() }
    public func impossibleEvent() { impossibleEvents.increment() }
}
