import NIOCore

/// The seam between the IP-layer tunnel and the operating system's packet
/// device: one Linux implementation (`TUNDevice`) and one in-memory fake
/// (`InMemoryPacketFlow`), in the spirit of wireguard-go's `tun.Device`.
///
/// Every `TunnelPacket` is one whole IP packet, or, from and to a device with
/// offloads, a TCP super-packet (`segmentSize` > 0, PROTOCOL.md B8): read
/// whole so that it can cross to a peer that takes it whole, and cut into
/// segments by whoever sends it to a peer that does not.
public protocol PacketFlow: AnyObject, Sendable {
    /// The interface name the system reports (a pattern such as "stun%d" resolved).
    var name: String { get }
    /// The interface's MTU in bytes.
    var mtu: Int { get }
    /// Traffic so far; a snapshot, safe to read from any thread.
    var counters: PacketFlowCounters { get }
    /// Whether super-packets written reach the system whole (a virtio_net_hdr
    /// with GSO); without it they are cut into ordinary packets first.
    var takesSuperPackets: Bool { get }

    /// Starts delivering packets that the system routes into the device, in
    /// order, in batches of 1 to `PacketFlowLimits.maximumBatchSize` packets,
    /// always on `eventLoop`. Call once; close the flow before shutting the loop down.
    func startReading(on eventLoop: EventLoop, _ deliver: @escaping @Sendable ([TunnelPacket]) -> Void)

    /// Hands packets to the system, one write per packet (or super-packet).
    /// Callable from any thread. A full device, a packet the system refuses,
    /// a super-packet that does not hold together, or a closed flow drops
    /// that packet and counts it in `writeDrops`: IP tolerates loss, so a
    /// stalled device never blocks the tunnel.
    func writePackets(_ packets: [TunnelPacket])

    /// Stops the reader and releases the device. Idempotent.
    func close()
}

public enum PacketFlowLimits {
    /// At most this many packets per delivered batch: the same bound as a
    /// `packets` message (PROTOCOL.md A4), so one batch fits one message.
    public static let maximumBatchSize = TunnelWireLimits.maximumPacketsPerMessage
}

/// Traffic counters of a `PacketFlow`.
public struct PacketFlowCounters: Sendable, Hashable {
    public var packetsRead = 0
    public var bytesRead = 0
    public var packetsWritten = 0
    public var bytesWritten = 0
    /// Packets given to `writePackets` that never reached the system.
    public var writeDrops = 0
    /// TCP super-packets the kernel handed over and that were split (TUN offloads).
    public var superPacketsRead = 0
    /// Writes that carried several packets coalesced into one super-packet (TUN offloads).
    public var superPacketsWritten = 0
    /// Reads dropped because their virtio_net_hdr did not fit the packet.
    public var malformedReads = 0

    public init() {}

    mutating func recordRead(_ packet: ByteBuffer) {
        packetsRead += 1
        bytesRead += packet.readableBytes
    }

    mutating func recordWritten(_ packet: ByteBuffer) {
        recordWritten(packet, segments: 1, headerLength: 0)
    }

    /// A write of `segments` packets, coalesced when more than one: each but
    /// the first also had its own `headerLength` bytes of headers.
    mutating func recordWritten(_ packet: ByteBuffer, segments: Int, headerLength: Int) {
        packetsWritten += segments
        bytesWritten += packet.readableBytes + (segments - 1) * headerLength
        if segments > 1 { superPacketsWritten += 1 }
    }
}

extension Array {
    /// Consecutive slices of at most `PacketFlowLimits.maximumBatchSize` packets, in order.
    var packetBatches: [ArraySlice<Element>] {
        stride(from: 0, to: count, by: PacketFlowLimits.maximumBatchSize).map {
            self[$0..<Swift.min($0 + PacketFlowLimits.maximumBatchSize, count)]
        }
    }
}
