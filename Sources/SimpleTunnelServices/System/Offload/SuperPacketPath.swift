import NIOCore
import SimpleTunnelWire

/// How one IP flow carries TCP super-packets (PROTOCOL.md B8), decided once
/// when the flow opens and then held by its two ends, the client's device
/// endpoint and the server's route to the client's lease. Packets read from
/// a device go to the peer whole only where the peers agreed, else cut into
/// their segments; a super-packet from the peer reaches the device only where
/// they agreed and it holds together. Nothing outside this folder asks
/// whether the extension was agreed.
public struct SuperPacketPath: Sendable, Hashable, CustomStringConvertible {
    /// Both peers agreed: super-packets cross the tunnel whole.
    private let carriesWhole: Bool

    /// Not agreed, or not yet: every super-packet is cut before the peer and refused from it.
    public static let segmented = SuperPacketPath(carriesWhole: false)

    private init(carriesWhole: Bool) {
        self.carriesWhole = carriesWhole
    }

    /// Whether a client offers them when it opens its IP flow: only for a device that reads them whole.
    public static func clientOffers(_ allowed: Bool, device: some PacketFlow) -> Bool {
        allowed && device.takesSuperPackets
    }

    /// The client's side, from its offer and the server's answer: agreed only when
    /// offered (a server that names them unasked gets none).
    public init(offered: Bool, answer: [String: PropertyListValue]?) {
        carriesWhole = offered && (answer?[IPFlowConfigurationKey.superPackets]?.integerValue ?? 0) != 0
    }

    /// The server's side: agreed when the client offered and the device hands
    /// them over whole; the agreement is said in `answer`.
    public init(peerOffered: Bool, device: some PacketFlow, answer: inout [String: PropertyListValue]) {
        carriesWhole = peerOffered && device.takesSuperPackets
        if carriesWhole { answer[IPFlowConfigurationKey.superPackets] = PropertyListValue(1) }
    }

    /// Packets read from the device, for the peer: as read, or with each super-packet cut into its segments.
    public func toPeer(_ packets: [TunnelPacket], allocator: ByteBufferAllocator, malformed: inout Int) -> [TunnelPacket] {
        carriesWhole ? packets : SuperPacket.flatten(packets, allocator: allocator, malformed: &malformed)
    }

    /// Whether a packet from the peer may be written to the device: any other
    /// packet, and a super-packet only where agreed and only whole.
    public func admitsFromPeer(_ packet: TunnelPacket) -> Bool {
        !packet.isSuperPacket || (carriesWhole && SuperPacket.isWritable(packet))
    }

    /// "agreed" or "off", for log lines.
    public var description: String { carriesWhole ? "agreed" : "off" }
}
