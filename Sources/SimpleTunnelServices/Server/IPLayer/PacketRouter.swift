import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Moves IP packets between the server's one TUN device and the tunnels that
/// lease addresses: packets read from the device go to the tunnel whose lease
/// is their destination (on that tunnel's event loop); packets from a tunnel
/// reach the device only when their source is that tunnel's lease and the
/// destination policy does not refuse their destination. A TCP super-packet
/// (PROTOCOL.md B8) is routed and checked once, as its segments share their
/// addresses and ports; a tunnel that did not agree to super-packets gets
/// them cut into ordinary packets, and may send none.
public final class PacketRouter: @unchecked Sendable {
    // @unchecked: `routes` and `drops` are behind locks; `device` is only
    // read from its own reader and written through its thread-safe write.
    private let device: PacketFlow
    private let routes = NIOLockedValueBox(Routes())
    private let drops = NIOLockedValueBox(Drops())
    /// Replaced whole by a reload; read once per batch.
    private let currentFilter: NIOLockedValueBox<PacketDestinationFilter>
    /// Set: a client's packets to another client's lease are dropped.
    private let isolation: ClientIsolation?
    private let logger: Logger
    private let metrics: TunnelServerMetrics?
    private let allocator = ByteBufferAllocator()
    /// Clients choose how many packets they send: a kind of drop is logged at
    /// most once per interval, with the count since the last line.
    static let logInterval = TimeAmount.seconds(10)

    /// Where packets read from the device go, by destination.
    struct Routes {
        var ipv4: [IPv4Address: Route] = [:]
        var ipv6: [IPv6Address: Route] = [:]
    }

    struct Route {
        let holder: LeaseBook.Holder
        let eventLoop: EventLoop
        /// Whether super-packets reach the tunnel's peer whole or cut.
        let path: SuperPacketPath
        let deliver: @Sendable ([TunnelPacket]) -> Void
    }

    public struct Counters: Sendable, Hashable {
        /// Packets from a client whose source is not its lease (anti-spoofing).
        public var spoofedDropped: UInt64 = 0
        /// Packets from a client of a family it has no lease of (IPv6 when the
        /// server offers IPv4 only, or the reverse), or not IP at all.
        public var nonIPv4Dropped: UInt64 = 0
        /// Packets from a client that stay on the tunnel's link: IPv6 from or
        /// to a link-local or multicast address (router solicitations,
        /// neighbour discovery), IPv4 to multicast, the limited broadcast or a
        /// link-local address no Allow address rule opens.
        public var linkScopedDropped: UInt64 = 0
        /// Packets from a client to a destination the policy refuses.
        public var policyDropped: UInt64 = 0
        /// Packets from a client whose port could not be found (too many
        /// IPv6 extension headers, AH, ESP, a first fragment cut short) to a
        /// destination a port rule covers: the rule fails closed.
        public var undeterminablePortDropped: UInt64 = 0
        /// Super-packets from a client that did not agree to them.
        public var superPacketsDropped: UInt64 = 0
        /// Super-packets from the server's own device that could not be cut
        /// for a client that takes none (the kernel's, so never seen; counted, not lost quietly).
        public var uncutSuperPacketsDropped: UInt64 = 0
        /// To another client's lease, with client isolation on.
        public var otherClientDropped: UInt64 = 0
    }

    /// The counters, and what is still to be logged of the drops a client causes.
    private struct Drops {
        var counters = Counters()
        var spoofed = LineRateLimiter(interval: PacketRouter.logInterval)
        var refused = LineRateLimiter(interval: PacketRouter.logInterval)
        var undeterminable = LineRateLimiter(interval: PacketRouter.logInterval)
        var superPackets = LineRateLimiter(interval: PacketRouter.logInterval)

        /// Counts `count` dropped packets; returns how many to log now, all since the last line (0: not yet).
        static func due(_ log: inout LineRateLimiter, _ count: UInt64, now: NIODeadline) -> UInt64 {
            guard count > 0, let counts = log.admit(.line, count: Int(count), now: now) else { return 0 }
            return UInt64(counts[.line] ?? 0)
        }
    }

    /// `policy` decides which destinations packets from clients may have
    /// (see `PacketDestinationFilter`); the default refuses none.
    public init(
        device: PacketFlow, policy: DestinationPolicy = .allowAll, isolation: ClientIsolation? = nil, metrics: TunnelServerMetrics? = nil,
        logger: Logger
    ) {
        self.isolation = isolation
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

    /// Starts reading the device. Batches are sorted out on the device's
    /// reader (the routes are behind a lock), so a packet makes one hop, to
    /// its tunnel's event loop.
    public func start() {
        device.startRouting { [weak self] packets, handOff in
            self?.route(packets, handOff: handOff)
        }
    }

    public func stop() {
        device.close()
    }

    /// How a client's IP flow carries super-packets: whole when it offered them and
    /// the device takes them whole; the agreement is said in `answer`.
    func superPacketPath(peerOffered: Bool, answer: inout [String: PropertyListValue]) -> SuperPacketPath {
        SuperPacketPath(peerOffered: peerOffered, device: device, answer: &answer)
    }

    /// Packets for `address` (and `ipv6`) go to `deliver`, called on `eventLoop`; replaces an earlier holder's route.
    /// `path` says whether a super-packet the device reads reaches `deliver` whole.
    func attach(
        _ address: IPv4Address?, ipv6: IPv6Address? = nil, holder: LeaseBook.Holder, eventLoop: EventLoop, path: SuperPacketPath = .segmented,
        deliver: @escaping @Sendable ([TunnelPacket]) -> Void
    ) {
        let route = Route(holder: holder, eventLoop: eventLoop, path: path, deliver: deliver)
        routes.withLockedValue { routes in
            if let address { routes.ipv4[address] = route }
            if let ipv6 { routes.ipv6[ipv6] = route }
        }
    }

    /// Removes the routes of `address` (and `ipv6`) if `holder` still has them.
    func detach(_ address: IPv4Address?, ipv6: IPv6Address? = nil, holder: LeaseBook.Holder) {
        routes.withLockedValue { routes in
            if let address, routes.ipv4[address]?.holder == holder { routes.ipv4[address] = nil }
            if let ipv6, routes.ipv6[ipv6]?.holder == holder { routes.ipv6[ipv6] = nil }
        }
    }

    /// What became of a client's packet.
    private enum Verdict {
        case allowed, spoofed, otherFamily, linkScoped, refused, undeterminablePort, superPacket, otherClient
    }

    /// Writes a client's packets to the device, dropping (and counting) any
    /// whose source is not the client's lease of its family, or that are
    /// link-scoped, or whose destination the policy refuses (or might, by a
    /// port their headers hide), and any super-packet when the client did not
    /// agree to them or it does not hold together (`path`).
    /// `loginFilter`: the rules of the client's login's groups, which its packets must pass too.
    func send(
        _ packets: [TunnelPacket], from lease: IPv4Address?, ipv6 lease6: IPv6Address? = nil, path: SuperPacketPath = .segmented,
        loginFilter: LoginPacketFilter? = nil
    ) {
        var allowed: [TunnelPacket] = []
        allowed.reserveCapacity(packets.count)
        var spoofed: UInt64 = 0
        var notIPv4: UInt64 = 0
        var linkScoped: UInt64 = 0
        var refused: UInt64 = 0
        var undeterminable: UInt64 = 0
        var unagreed: UInt64 = 0
        var otherClient: UInt64 = 0
        let filter = currentFilter.withLockedValue { $0 }
        for packet in packets {
            // A super-packet needs the client's agreement and must hold together (PROTOCOL.md B8); checked once, here.
            let verdict =
                !path.admitsFromPeer(packet)
                ? .superPacket : verdict(on: packet.bytes, lease: lease, lease6: lease6, filter: filter, loginFilter: loginFilter)
            switch verdict {
            case .allowed: allowed.append(packet)
            case .superPacket: unagreed += 1
            case .spoofed: spoofed += 1
            case .otherFamily: notIPv4 += 1
            case .linkScoped: linkScoped += 1
            case .refused: refused += 1
            case .undeterminablePort: undeterminable += 1
            case .otherClient: otherClient += 1
            }
        }
        // The lock is shared by every tunnel: taken only when there is something to count.
        if spoofed > 0 || notIPv4 > 0 || refused > 0 || undeterminable > 0 || linkScoped > 0 || unagreed > 0 || otherClient > 0 {
            let leases = [lease?.description, lease6?.description].compactMap { $0 }.joined(separator: " and ")
            let now = NIODeadline.now()
            let (spoofedToLog, refusedToLog, undeterminableToLog, superPacketsToLog) = drops.withLockedValue { drops in
                drops.counters.spoofedDropped += spoofed
                drops.counters.nonIPv4Dropped += notIPv4
                drops.counters.linkScopedDropped += linkScoped
                drops.counters.policyDropped += refused
                drops.counters.undeterminablePortDropped += undeterminable
                drops.counters.superPacketsDropped += unagreed
                drops.counters.otherClientDropped += otherClient
                return (
                    Drops.due(&drops.spoofed, spoofed, now: now), Drops.due(&drops.refused, refused, now: now),
                    Drops.due(&drops.undeterminable, undeterminable, now: now), Drops.due(&drops.superPackets, unagreed, now: now)
                )
            }
            metrics?.droppedPackets(.spoofed, count: Int(spoofed))
            metrics?.droppedPackets(.notIPv4, count: Int(notIPv4))
            metrics?.droppedPackets(.linkScoped, count: Int(linkScoped))
            metrics?.droppedPackets(.policy, count: Int(refused))
            metrics?.droppedPackets(.undeterminablePort, count: Int(undeterminable))
            metrics?.droppedPackets(.superPacket, count: Int(unagreed))
            metrics?.droppedPackets(.clientIsolation, count: Int(otherClient))
            if spoofedToLog > 0 {
                logger.notice("dropped packets whose source is not the lease", metadata: ["lease": "\(leases)", "count": "\(spoofedToLog)"])
            }
            if refusedToLog > 0 {
                logger.notice("dropped packets whose destination the policy refuses", metadata: ["lease": "\(leases)", "count": "\(refusedToLog)"])
            }
            if superPacketsToLog > 0 {
                logger.notice(
                    "dropped super-packets the client did not agree to, or that do not hold together",
                    metadata: ["lease": "\(leases)", "count": "\(superPacketsToLog)"])
            }
            if undeterminableToLog > 0 {
                logger.notice(
                    "dropped packets whose port could not be found, to a destination a port rule covers",
                    metadata: ["lease": "\(leases)", "count": "\(undeterminableToLog)"])
            }
        }
        if !allowed.isEmpty {
            device.writePackets(allowed)
        }
    }

    private func verdict(
        on packet: ByteBuffer, lease: IPv4Address?, lease6: IPv6Address?, filter: PacketDestinationFilter, loginFilter: LoginPacketFilter?
    ) -> Verdict {
        if let addresses = IPv4PacketHeader.addresses(of: packet) {
            // Without an IPv4 lease (a server offering IPv6 only) a client's IPv4 has nowhere to go.
            guard let lease else { return .otherFamily }
            guard addresses.source == lease else { return .spoofed }
            let destination = addresses.destination
            // Found only when asked for: most packets go to a destination no rule names.
            var port: PortLookup { IPv4PacketHeader.destinationPort(of: packet) }
            if IPv4PacketHeader.isLinkScoped(destination) && filter.keepsOnLink(destination, port: port) { return .linkScoped }
            if isolation?.separates(destination) == true { return .otherClient }
            let verdict: PacketDestinationFilter.Verdict = filter.isEmpty ? .allowed : filter.verdict(for: destination, port: port)
            guard let loginFilter, !loginFilter.isEmpty, verdict != .refused else { return Self.verdict(verdict) }
            return Self.verdict(max(verdict, loginFilter.verdict(for: destination, port: port)))
        }
        // Without an IPv6 lease a client's IPv6 (router solicitations from its TUN) has nowhere to go.
        guard let lease6, let addresses = IPv6PacketHeader.addresses(of: packet) else { return .otherFamily }
        if IPv6PacketHeader.isLinkScoped(addresses.source) || IPv6PacketHeader.isLinkScoped(addresses.destination) {
            return .linkScoped
        }
        guard addresses.source == lease6 else { return .spoofed }
        if isolation?.separates(addresses.destination) == true { return .otherClient }
        let hasLoginRules = !(loginFilter?.isEmpty ?? true)
        guard !filter.isEmpty || hasLoginRules else { return .allowed }
        let port = IPv6PacketHeader.destinationPort(of: packet)
        let verdict: PacketDestinationFilter.Verdict = filter.isEmpty ? .allowed : filter.verdict(for: addresses.destination, port: port)
        guard let loginFilter, hasLoginRules, verdict != .refused else { return Self.verdict(verdict) }
        return Self.verdict(max(verdict, loginFilter.verdict(for: addresses.destination, port: port)))
    }

    private static func verdict(_ verdict: PacketDestinationFilter.Verdict) -> Verdict {
        switch verdict {
        case .allowed: .allowed
        case .portUndeterminable: .undeterminablePort
        case .refused: .refused
        }
    }

    private func route(_ packets: [TunnelPacket], handOff: PacketHandOff) {
        var batches: [LeaseBook.Holder: (route: Route, packets: [TunnelPacket])] = [:]
        var unroutable: UInt64 = 0
        let table = routes.withLockedValue { $0 }
        for var packet in packets {
            let route: Route?
            if let destination = IPv4PacketHeader.addresses(of: packet.bytes)?.destination {
                route = table.ipv4[destination]
                packet.protocolNumber = TunnelPacket.ProtocolNumber.ipv4
            } else if let destination = IPv6PacketHeader.addresses(of: packet.bytes)?.destination {
                route = table.ipv6[destination]
                packet.protocolNumber = TunnelPacket.ProtocolNumber.ipv6
            } else {
                route = nil
            }
            guard let route else {
                unroutable += 1
                continue
            }
            batches[route.holder, default: (route, [])].packets.append(packet)
        }
        metrics?.droppedPackets(.unroutable, count: Int(unroutable))
        for (_, batch) in batches {
            let route = batch.route
            var malformed = 0
            let packets = route.path.toPeer(batch.packets, allocator: allocator, malformed: &malformed)
            if malformed > 0 {
                drops.withLockedValue { $0.counters.uncutSuperPacketsDropped += UInt64(malformed) }
                metrics?.droppedPackets(.uncutSuperPacket, count: malformed)
            }
            for slice in packets.packetBatches {
                let packets = Array(slice)
                handOff.execute(on: route.eventLoop) { route.deliver(packets) }
            }
        }
    }
}
