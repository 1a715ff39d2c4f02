import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Moves IP packets between the server's one TUN device and the tunnels that
/// lease addresses: packets read from the device go to the tunnel whose lease
/// is their destination (on that tunnel's event loop); packets from a tunnel
/// reach the device only when their source is that tunnel's lease.
public final class PacketRouter: @unchecked Sendable {
    // @unchecked: `routes` and `counters` are behind locks; `device` is only
    // read from its own reader and written through its thread-safe write.
    private let device: PacketFlow
    private let routes = NIOLockedValueBox<[IPv4Address: Route]>([:])
    private let counterBox = NIOLockedValueBox(Counters())
    private let logger: Logger
    private let metrics: TunnelServerMetrics?

    struct Route {
        let holder: LeaseBook.Holder
        let eventLoop: EventLoop
        let deliver: @Sendable ([TunnelPacket]) -> Void
    }

    public struct Counters: Sendable, Hashable {
        /// Packets from a client whose source is not its lease (anti-spoofing).
        public var spoofedDropped: UInt64 = 0
        /// Packets from a client that are not IPv4 (the pool is IPv4 only).
        public var nonIPv4Dropped: UInt64 = 0
    }

    public init(device: PacketFlow, metrics: TunnelServerMetrics? = nil, logger: Logger) {
        self.device = device
        self.metrics = metrics
        self.logger = logger
    }

    public var counters: Counters { counterBox.withLockedValue { $0 } }

    /// Starts reading the device; batches are sorted out on `eventLoop`.
    public func start(on eventLoop: EventLoop) {
        device.startReading(on: eventLoop) { [weak self] packets in
            self?.route(packets)
        }
    }

    public func stop() {
        device.close()
    }

    /// Packets for `address` go to `deliver`, called on `eventLoop`; replaces an earlier holder's route.
    func attach(_ address: IPv4Address, holder: LeaseBook.Holder, eventLoop: EventLoop, deliver: @escaping @Sendable ([TunnelPacket]) -> Void) {
        routes.withLockedValue { $0[address] = Route(holder: holder, eventLoop: eventLoop, deliver: deliver) }
    }

    /// Removes the route of `address` if `holder` still has it.
    func detach(_ address: IPv4Address, holder: LeaseBook.Holder) {
        routes.withLockedValue { routes in
            if routes[address]?.holder == holder { routes[address] = nil }
        }
    }

    /// Writes a client's packets to the device, dropping (and counting) any
    /// whose source is not the client's lease.
    func send(_ packets: [TunnelPacket], from lease: IPv4Address) {
        var allowed: [ByteBuffer] = []
        allowed.reserveCapacity(packets.count)
        var spoofed: UInt64 = 0
        var notIPv4: UInt64 = 0
        for packet in packets {
            guard let addresses = IPv4PacketHeader.addresses(of: packet.bytes) else {
                // The pool is IPv4: a client's IPv6 (router solicitations from its TUN) has nowhere to go.
                notIPv4 += 1
                continue
            }
            if addresses.source == lease {
                allowed.append(packet.bytes)
            } else {
                spoofed += 1
            }
        }
        // The lock is shared by every tunnel: taken only when there is something to count.
        if spoofed > 0 || notIPv4 > 0 {
            counterBox.withLockedValue {
                $0.spoofedDropped += spoofed
                $0.nonIPv4Dropped += notIPv4
            }
        }
        metrics?.droppedPackets(.spoofed, count: Int(spoofed))
        metrics?.droppedPackets(.notIPv4, count: Int(notIPv4))
        if spoofed > 0 {
            logger.notice("dropped packets whose source is not the lease", metadata: ["lease": "\(lease)", "count": "\(spoofed)"])
        }
        if !allowed.isEmpty {
            device.writePackets(allowed)
        }
    }

    private func route(_ packets: [ByteBuffer]) {
        var batches: [IPv4Address: [TunnelPacket]] = [:]
        var unroutable: UInt64 = 0
        let table = routes.withLockedValue { $0 }
        for packet in packets {
            guard let destination = IPv4PacketHeader.addresses(of: packet)?.destination, table[destination] != nil else {
                unroutable += 1
                continue
            }
            batches[destination, default: []].append(TunnelPacket(bytes: packet, protocolNumber: TunnelPacket.ProtocolNumber.ipv4))
        }
        metrics?.droppedPackets(.unroutable, count: Int(unroutable))
        for (destination, batch) in batches {
            guard let route = table[destination] else { continue }
            route.eventLoop.execute { route.deliver(batch) }
        }
    }
}
