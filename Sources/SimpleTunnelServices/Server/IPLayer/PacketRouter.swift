import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Moves IP packets between the server's one TUN device and the tunnels that
/// lease addresses: packets read from the device go to the tunnel whose lease
/// is their destination (on that tunnel's event loop); packets from a tunnel
/// reach the device only when their source is that tunnel's lease and the
/// destination policy does not refuse their destination.
public final class PacketRouter: @unchecked Sendable {
    // @unchecked: `routes` and `drops` are behind locks; `device` is only
    // read from its own reader and written through its thread-safe write.
    private let device: PacketFlow
    private let routes = NIOLockedValueBox<[IPv4Address: Route]>([:])
    private let drops = NIOLockedValueBox(Drops())
    /// Replaced whole by a reload; read once per batch.
    private let currentFilter: NIOLockedValueBox<PacketDestinationFilter>
    private let logger: Logger
    private let metrics: TunnelServerMetrics?
    /// Clients choose how many packets they send: a kind of drop is logged at
    /// most once per interval, with the count since the last line.
    static let logInterval = TimeAmount.seconds(10)

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
        /// Packets from a client to a destination the policy refuses.
        public var policyDropped: UInt64 = 0
    }

    /// The counters, and what is still to be logged of the drops a client causes.
    private struct Drops {
        var counters = Counters()
        var spoofed = LoggedCount()
        var refused = LoggedCount()
    }

    private struct LoggedCount {
        var unlogged: UInt64 = 0
        var nextLog = NIODeadline.uptimeNanoseconds(0)

        /// Adds `count`; returns the count to log now, all since the last line (0: not yet).
        mutating func add(_ count: UInt64, now: NIODeadline) -> UInt64 {
            unlogged += count
            guard count > 0, now >= nextLog else { return 0 }
            nextLog = now + PacketRouter.logInterval
            defer { unlogged = 0 }
            return unlogged
        }
    }

    /// `policy` decides which destinations packets from clients may have
    /// (see `PacketDestinationFilter`); the default refuses none.
    public init(device: PacketFlow, policy: DestinationPolicy = .allowAll, metrics: TunnelServerMetrics? = nil, logger: Logger) {
        self.device = device
        self.currentFilter = NIOLockedValueBox(PacketDestinationFilter(policy))
        self.metrics = metrics
        self.logger = logger
    }

    public var counters: Counters { drops.withLockedValue { $0.counters } }

    /// The destination rules for packets from now on (a reload).
    public func update(policy: DestinationPolicy) {
        let filter = PacketDestinationFilter(policy)
        currentFilter.withLockedValue { $0 = filter }
    }

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
    /// whose source is not the client's lease or whose destination the policy refuses.
    func send(_ packets: [TunnelPacket], from lease: IPv4Address) {
        var allowed: [ByteBuffer] = []
        allowed.reserveCapacity(packets.count)
        var spoofed: UInt64 = 0
        var notIPv4: UInt64 = 0
        var refused: UInt64 = 0
        let filter = currentFilter.withLockedValue { $0 }
        let filtering = !filter.isEmpty
        for packet in packets {
            guard let addresses = IPv4PacketHeader.addresses(of: packet.bytes) else {
                // The pool is IPv4: a client's IPv6 (router solicitations from its TUN) has nowhere to go.
                notIPv4 += 1
                continue
            }
            if addresses.source != lease {
                spoofed += 1
            } else if filtering && filter.refuses(addresses.destination, port: IPv4PacketHeader.destinationPort(of: packet.bytes)) {
                refused += 1
            } else {
                allowed.append(packet.bytes)
            }
        }
        // The lock is shared by every tunnel: taken only when there is something to count.
        if spoofed > 0 || notIPv4 > 0 || refused > 0 {
            let now = NIODeadline.now()
            let (spoofedToLog, refusedToLog) = drops.withLockedValue { drops in
                drops.counters.spoofedDropped += spoofed
                drops.counters.nonIPv4Dropped += notIPv4
                drops.counters.policyDropped += refused
                return (drops.spoofed.add(spoofed, now: now), drops.refused.add(refused, now: now))
            }
            metrics?.droppedPackets(.spoofed, count: Int(spoofed))
            metrics?.droppedPackets(.notIPv4, count: Int(notIPv4))
            metrics?.droppedPackets(.policy, count: Int(refused))
            if spoofedToLog > 0 {
                logger.notice("dropped packets whose source is not the lease", metadata: ["lease": "\(lease)", "count": "\(spoofedToLog)"])
            }
            if refusedToLog > 0 {
                logger.notice("dropped packets whose destination the policy refuses", metadata: ["lease": "\(lease)", "count": "\(refusedToLog)"])
            }
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
