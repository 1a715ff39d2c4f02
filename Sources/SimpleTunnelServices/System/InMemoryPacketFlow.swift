import NIOConcurrencyHelpers
import NIOCore

/// A `PacketFlow` without a device, for tests: either one end whose "system"
/// side the test plays (`inject` packets in, inspect `written`), or two ends
/// made by `makePair`, where what one writes the other reads.
///
/// Delivery follows the TUN device's rules: in order, batches of at most
/// `PacketFlowLimits.maximumBatchSize`; routed on the injecting thread, as a
/// device routes on its reader's.
public final class InMemoryPacketFlow: PacketFlow, @unchecked Sendable {
    // @unchecked: all mutable state lives in `state`, behind its lock.
    public let name: String
    public let mtu: Int
    /// Packets that may wait for `startReading`; more are dropped, as a full device would.
    public let capacity: Int
    /// Set for a fake of a device with offloads: super-packets pass whole.
    public let takesSuperPackets: Bool

    private typealias Reader = @Sendable ([TunnelPacket], PacketHandOff) -> Void

    private struct State {
        var reader: Reader?
        var waiting: [TunnelPacket] = []
        var written: [TunnelPacket] = []
        var counters = PacketFlowCounters()
        var isClosed = false
        weak var peer: InMemoryPacketFlow?
    }

    private let state = NIOLockedValueBox(State())

    public init(name: String = "fake0", mtu: Int = 1500, capacity: Int = 4096, takesSuperPackets: Bool = false) {
        self.name = name
        self.mtu = mtu
        self.capacity = capacity
        self.takesSuperPackets = takesSuperPackets
    }

    /// Two linked ends: packets written to one are read from the other.
    public static func makePair(mtu: Int = 1500, capacity: Int = 4096) -> (InMemoryPacketFlow, InMemoryPacketFlow) {
        let a = InMemoryPacketFlow(name: "fake-a", mtu: mtu, capacity: capacity)
        let b = InMemoryPacketFlow(name: "fake-b", mtu: mtu, capacity: capacity)
        a.state.withLockedValue { $0.peer = b }
        b.state.withLockedValue { $0.peer = a }
        return (a, b)
    }

    public var counters: PacketFlowCounters {
        state.withLockedValue { $0.counters }
    }

    /// What this end wrote, when it has no peer (a linked end forwards instead of recording).
    public var written: [ByteBuffer] {
        state.withLockedValue { $0.written.map(\.bytes) }
    }

    /// What this end wrote, super-packets as they came.
    public var writtenPackets: [TunnelPacket] {
        state.withLockedValue { $0.written }
    }

    /// Returns and forgets what this end wrote so far.
    public func takeWritten() -> [ByteBuffer] {
        state.withLockedValue { state in
            defer { state.written.removeAll() }
            return state.written.map(\.bytes)
        }
    }

    /// Ordinary packets as if the system routed them into the device.
    @discardableResult
    public func inject(_ packets: [ByteBuffer]) -> Int {
        inject(packets.map { TunnelPacket(bytes: $0) })
    }

    /// Packets as if the system routed them into the device. Returns how many
    /// were accepted: all of them unless the flow is closed or, before
    /// `startReading`, `capacity` packets are already waiting.
    @discardableResult
    public func inject(_ packets: [TunnelPacket]) -> Int {
        state.withLockedValue { state in
            guard !state.isClosed else { return 0 }
            guard let reader = state.reader else {
                let accepted = min(packets.count, max(0, capacity - state.waiting.count))
                state.waiting.append(contentsOf: packets.prefix(accepted))
                return accepted
            }
            // Scheduling under the lock keeps concurrent injections in order.
            Self.deliver(packets, to: reader, counters: &state.counters)
            return packets.count
        }
    }

    public func startRouting(_ route: @escaping @Sendable ([TunnelPacket], PacketHandOff) -> Void) {
        state.withLockedValue { state in
            precondition(state.reader == nil, "InMemoryPacketFlow.startRouting called twice on \(name)")
            guard !state.isClosed else { return }
            state.reader = route
            Self.deliver(state.waiting, to: route, counters: &state.counters)
            state.waiting.removeAll()
        }
    }

    public func writePackets(_ packets: [TunnelPacket]) {
        let peer: InMemoryPacketFlow? = state.withLockedValue { state in
            guard !state.isClosed else {
                state.counters.writeDrops += packets.count
                return nil
            }
            guard let peer = state.peer else {
                state.written.append(contentsOf: packets)
                for packet in packets { state.counters.recordWritten(packet.bytes) }
                return nil
            }
            return peer
        }
        // Outside our lock: the peer takes its own.
        guard let peer else { return }
        let accepted = peer.inject(packets)
        state.withLockedValue { state in
            for packet in packets.prefix(accepted) { state.counters.recordWritten(packet.bytes) }
            state.counters.writeDrops += packets.count - accepted
        }
    }

    public func close() {
        state.withLockedValue { state in
            state.isClosed = true
            state.reader = nil
            state.waiting.removeAll()
        }
    }

    private static func deliver(_ packets: [TunnelPacket], to reader: Reader, counters: inout PacketFlowCounters) {
        for batch in packets.packetBatches {
            let packets = Array(batch)
            for packet in packets { counters.recordRead(packet.bytes) }
            reader(packets, .unbounded)
        }
    }
}
