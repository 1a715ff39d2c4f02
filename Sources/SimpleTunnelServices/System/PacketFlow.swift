import Dispatch
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

    /// Starts reading packets that the system routes into the device, handing
    /// each wake-up's batch, in order, to `route` on the reader itself (a TUN
    /// device's own thread, never an event loop), which passes its parts to
    /// the event loops that own them through `PacketHandOff`: one hop from the
    /// reader to each tunnel, however many tunnels share the device. Call once
    /// (or `startReading` once); close the flow before shutting the loops down.
    func startRouting(_ route: @escaping @Sendable (_ batch: [TunnelPacket], _ handOff: PacketHandOff) -> Void)

    /// Starts delivering packets that the system routes into the device, in
    /// order, in batches of 1 to `PacketFlowLimits.maximumBatchSize` packets,
    /// always on `eventLoop`: for a device that one tunnel reads alone. Call
    /// once (or `startRouting` once); close the flow before shutting the loop down.
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

extension PacketFlow {
    public func startReading(on eventLoop: EventLoop, _ deliver: @escaping @Sendable ([TunnelPacket]) -> Void) {
        startReadingThroughRouting(on: eventLoop, deliver)
    }

    /// `startReading` by way of `startRouting`: the reader's batches hop to `eventLoop`.
    func startReadingThroughRouting(on eventLoop: EventLoop, _ deliver: @escaping @Sendable ([TunnelPacket]) -> Void) {
        startRouting { batch, handOff in
            // A UDP super-packet cut into its datagrams can make more than one batch's worth.
            if batch.count <= PacketFlowLimits.maximumBatchSize {
                handOff.execute(on: eventLoop) { deliver(batch) }
            } else {
                for slice in batch.packetBatches {
                    let packets = Array(slice)
                    handOff.execute(on: eventLoop) { deliver(packets) }
                }
            }
        }
    }
}

/// How a reader's batches reach event loops: in order per loop, and, from a
/// TUN device, bounded. A hand-off waits while `maximumInFlight` of the
/// device's hand-offs are still queued on their loops, so a reader faster than
/// the tunnels leaves the rest in the kernel's queue (and then its drops)
/// instead of piling work up in memory.
public struct PacketHandOff: Sendable {
    private let inFlight: DispatchSemaphore?
    private let isClosed: @Sendable () -> Bool

    /// Hand-offs of one device queued on event loops and not yet run.
    static let maximumInFlight = 64

    /// Bounded by `maximumInFlight`; `isClosed` ends a wait for room when the device closes.
    static func bounded(isClosed: @escaping @Sendable () -> Bool) -> PacketHandOff {
        PacketHandOff(inFlight: DispatchSemaphore(value: maximumInFlight), isClosed: isClosed)
    }

    /// Unbounded: for a fake device, whose test injects what it wants.
    static let unbounded = PacketHandOff(inFlight: nil, isClosed: { false })

    /// Runs `work` on `eventLoop` after the hand-offs queued before it; waits
    /// for room first, and drops `work` if the device closes meanwhile.
    public func execute(on eventLoop: EventLoop, _ work: @escaping @Sendable () -> Void) {
        guard let inFlight else {
            eventLoop.execute(work)
            return
        }
        while inFlight.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
            if isClosed() { return }
        }
        eventLoop.execute {
            work()
            inFlight.signal()
        }
    }
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
    /// Super-packets the kernel handed over (TUN offloads): TCP ones go on whole, UDP ones are cut into datagrams.
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
