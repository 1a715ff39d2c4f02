import Logging
import NIOConcurrencyHelpers
import NIOCore

/// What `tunnel-client ip` was asked for.
public struct IPTunnelOptions: Sendable {
    /// Interface name, or a pattern such as `stun%d`.
    public var deviceName = "stun%d"
    /// Apply the pushed routes (or route everything); off with `--no-routes`.
    public var applyRoutes = true
    /// How the pushed DNS settings are applied (`--dns`).
    public var dns = DNSMode.off
    /// Nil: the MTU the server pushes (`IPv4.MTU`), else 1400.
    public var mtu: Int?
    /// Offer to carry TCP super-packets whole (PROTOCOL.md B8) when the device
    /// has offloads; off with `--no-super-packets`.
    public var offerSuperPackets = true
    /// Drop whatever would leave a full tunnel outside it (`KillSwitchRules`); off with `--kill-switch off`.
    public var killSwitch = true
    /// Networks the kill switch lets out directly (`--allow-lan`).
    public var allowedLAN: [IPNetworkChoice] = []
    /// Where what is changed outside the device is kept for after a crash (`NetworkLeftovers`); nil keeps nothing.
    public var journal: NetworkUndoJournal?

    public init() {}
}

/// The settings an IP flow's configuration carries (PROTOCOL.md A5).
public struct IPTunnelSettings: Sendable, Hashable {
    /// Nil when the server offers IPv6 only.
    public var address: IPv4Address?
    public var prefixLength: Int
    /// Nil: route everything through the tunnel.
    public var routes: [IPv4Network]?
    public var dnsServers: [IPAddress]
    public var searchDomains: [String]
    /// `DNS.MatchDomains`: the names the DNS servers are for (split DNS); "" matches all.
    public var matchDomains: [String]
    /// `DNS.MatchDomainsNoSearch`: the match domains are not searched.
    public var matchDomainsNoSearch: Bool
    /// `IPv4.MTU` (or `IPv6.MTU`), the server's device MTU (ours, PROTOCOL.md A5); nil when absent or out of range.
    public var mtu: Int?
    /// The IPv6 lease (ours, PROTOCOL.md B7); nil when the server offers IPv4 only.
    public var ipv6: IPv6Settings?
    /// `IPv6` of the configuration: the leased address and what to route through the tunnel.
    public struct IPv6Settings: Sendable, Hashable {
        public var address: IPv6Address
        public var prefixLength: Int
        /// Nil: route all IPv6 through the tunnel.
        public var routes: [IPv6Network]?
    }

    public init(configuration: [String: PropertyListValue]) throws {
        let ipv4 = configuration["IPv4"]?.dictionaryValue ?? [:]
        let ipv6 = try configuration["IPv6"].map { value throws in try Self.ipv6Settings(value) }
        self.ipv6 = ipv6
        let address = ipv4["Address"]?.stringValue.flatMap { IPv4Address($0) }
        // A server offering IPv6 only sends no IPv4 dictionary.
        guard address != nil || (configuration["IPv4"] == nil && ipv6 != nil) else {
            throw IPTunnelError("the server's configuration has no IPv4.Address for the tunnel")
        }
        let netmask = ipv4["Netmask"]?.stringValue ?? "255.255.255.255"
        guard let network = try? IPv4Network(address: "0.0.0.0", netmask: netmask) else {
            throw IPTunnelError("the server's IPv4.Netmask \"\(netmask)\" is not a netmask")
        }
        self.address = address
        self.prefixLength = network.prefixLength
        if let routes = ipv4["Routes"]?.arrayValue {
            self.routes = try routes.map { route in
                guard let entry = route.dictionaryValue, let address = entry["Address"]?.stringValue, let mask = entry["Netmask"]?.stringValue,
                    let network = try? IPv4Network(address: address, netmask: mask)
                else {
                    throw IPTunnelError("the server's IPv4.Routes holds an entry that is not {Address, Netmask}: \(route)")
                }
                return network
            }
        } else {
            self.routes = nil
        }
        let ipv6MTU = configuration["IPv6"]?.dictionaryValue?["MTU"]?.integerValue.flatMap { Int(exactly: $0) }.flatMap { (1280...65535).contains($0) ? $0 : nil }
        self.mtu = ipv4["MTU"]?.integerValue.flatMap { Int(exactly: $0) }.flatMap { (576...65535).contains($0) ? $0 : nil } ?? ipv6MTU
        let dns = configuration["DNS"]?.dictionaryValue ?? [:]
        self.dnsServers = (dns["Servers"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { IPAddress($0) } }
        self.searchDomains = (dns["SearchDomains"]?.arrayValue ?? []).compactMap(\.stringValue)
        self.matchDomains = (dns["MatchDomains"]?.arrayValue ?? []).compactMap(\.stringValue)
        // A boolean, or an integer (0 or 1) as some property-list writers give it.
        switch dns["MatchDomainsNoSearch"] {
        case .boolean(let value)?: self.matchDomainsNoSearch = value
        case .integer(let value)?: self.matchDomainsNoSearch = value != 0
        default: self.matchDomainsNoSearch = false
        }
    }
}

extension IPTunnelSettings {
    fileprivate static func ipv6Settings(_ value: PropertyListValue) throws -> IPv6Settings {
        guard let ipv6 = value.dictionaryValue, let addressText = ipv6["Address"]?.stringValue, let address = IPv6Address(addressText) else {
            throw IPTunnelError("the server's IPv6 dictionary has no IPv6 Address for the tunnel: \(value)")
        }
        let prefixLength = ipv6["PrefixLength"]?.integerValue.flatMap { Int(exactly: $0) } ?? 128
        guard (0...128).contains(prefixLength) else {
            throw IPTunnelError("the server's IPv6.PrefixLength \(prefixLength) is not from 0 to 128")
        }
        var settings = IPv6Settings(address: address, prefixLength: prefixLength, routes: nil)
        if let routes = ipv6["Routes"]?.arrayValue {
            settings.routes = try routes.map { route in
                guard let entry = route.dictionaryValue, let text = entry["Address"]?.stringValue, let network = IPv6Address(text),
                    let length = entry["PrefixLength"]?.integerValue.flatMap({ Int(exactly: $0) }),
                    let route = IPv6Network(address: network, prefixLength: length)
                else {
                    throw IPTunnelError("the server's IPv6.Routes holds an entry that is not {Address, PrefixLength}: \(route)")
                }
                return route
            }
        }
        return settings
    }

    /// IPv6 needs links of at least this MTU (RFC 8200); the kernel turns IPv6 off on a smaller one.
    public static let minimumIPv6MTU = 1280

    /// Routes, when applied, send all of every family the tunnel has through it.
    public var carriesEverything: Bool {
        let ipv4Everything = address == nil || routes == nil
        let ipv6Everything = ipv6.map { $0.routes == nil } ?? true
        return ipv4Everything && ipv6Everything
    }

    /// The leases as `status` and the log show them: `10.90.0.2/32` or `10.90.0.2/32, fd00:90::2/128`.
    public var leaseDescription: String {
        [address.map { "\($0)/\(prefixLength)" }, ipv6.map { "\($0.address)/\($0.prefixLength)" }].compactMap { $0 }.joined(separator: ", ")
    }
}

/// A full IP tunnel on this machine: a TUN device carrying the IP flow, with
/// the address, routes (and DNS, when asked) the server pushed. The device
/// outlives a tunnel: after a reconnection the IP flow is opened again in the
/// new tunnel, and while there is none, packets routed into the device are
/// dropped instead of leaking around it. Everything it changed is removed by `stop()`.
public final class IPTunnelSession: Sendable {
    public var settings: IPTunnelSettings { current.withLockedValue { $0 } }
    public let deviceName: String
    private let current: NIOLockedValueBox<IPTunnelSettings>
    private let device: TUNDevice
    private let link: NIOLoopBound<DeviceLink>
    private let network: LinuxNetworkConfigurator
    /// The kill switch's table, apart from `network`: a reconnection that
    /// applies new settings undoes `network`, and the kill switch must hold meanwhile.
    private let guardrail: LinuxNetworkConfigurator
    /// What the kill switch is, when one is up (`status` shows it).
    public let killSwitch: KillSwitchRules?
    private let routeWatch: RouteWatch?
    private let options: IPTunnelOptions
    private let logger: Logger

    private init(
        settings: IPTunnelSettings, device: TUNDevice, link: NIOLoopBound<DeviceLink>, network: LinuxNetworkConfigurator,
        guardrail: LinuxNetworkConfigurator, killSwitch: KillSwitchRules?, routeWatch: RouteWatch?, options: IPTunnelOptions, logger: Logger
    ) {
        self.routeWatch = routeWatch
        self.current = NIOLockedValueBox(settings)
        self.deviceName = device.name
        self.device = device
        self.link = link
        self.network = network
        self.guardrail = guardrail
        self.killSwitch = killSwitch
        self.options = options
        self.logger = logger
    }

    /// `status`, when given, counts the routes added later that win over the tunnel's.
    public static func start(
        tunnel: TunnelClientConnection, options: IPTunnelOptions, status: TunnelClientStatusBoard? = nil, logger: Logger
    ) async throws -> IPTunnelSession {
        let device = try TUNDevice.open(name: options.deviceName, logger: logger)
        let link = try await tunnel.eventLoop.submit { NIOLoopBound(DeviceLink(device: device, eventLoop: tunnel.eventLoop), eventLoop: tunnel.eventLoop) }.get()
        let network = LinuxNetworkConfigurator(journal: options.journal.map { ($0, .network) }, logger: logger)
        let guardrail = LinuxNetworkConfigurator(journal: options.journal.map { ($0, .guardrail) }, logger: logger)
        do {
            let (configuration, path) = try await openFlow(tunnel: tunnel, link: link, options: options)
            let settings = try IPTunnelSettings(configuration: configuration)
            // Before the routes: from the moment the tunnel carries everything, nothing gets around it.
            let killSwitch = KillSwitchRules.wanted(settings, options: options) ? KillSwitchRules(device: device.name, allowedLAN: options.allowedLAN) : nil
            if let killSwitch {
                try install(killSwitch, guardrail: guardrail, logger: logger)
            }
            try apply(settings, options: options, server: tunnel.serverAddress, device: device.name, network: network, logger: logger)
            let cover = TunnelRouteCover(settings, applyRoutes: options.applyRoutes, server: tunnel.serverAddress.flatMap(IPAddress.init)?.unmapped, device: device.name)
            let watch = try cover.isEmpty ? nil : RouteWatch.start(cover: cover, on: tunnel.eventLoop, logger: logger) { [killSwitch] route, beaten in
                let text = "\(route.destination)\(route.gateway.map { " via \($0)" } ?? "")\(route.device.map { " dev \($0)" } ?? "")"
                status?.noteRouteOverTunnel(text)
                if killSwitch != nil {
                    logger.notice("a route was added that wins over the tunnel's \(beaten): \(text); the kill switch drops what would take it")
                } else {
                    logger.warning("a route was added that wins over the tunnel's \(beaten): \(text); traffic there now leaves outside the tunnel (the kill switch is off)")
                }
            }
            logger.notice(
                "IP tunnel up on \(device.name): \(settings.leaseDescription), routes \(options.applyRoutes ? (settings.routes.map { $0.map(\.description).joined(separator: ", ") } ?? "everything") : "none")",
                metadata: ["super-packets": "\(path)"]
            )
            return IPTunnelSession(
                settings: settings, device: device, link: link, network: network, guardrail: guardrail, killSwitch: killSwitch, routeWatch: watch,
                options: options, logger: logger)
        } catch {
            try? network.undoAll()
            try? guardrail.undoAll()
            device.close()
            throw error
        }
    }

    /// After a reconnection: opens the IP flow in the new tunnel (on the same
    /// event loop) and keeps the device's settings, or replaces them when the
    /// server leased another address or pushes other settings.
    public func reattach(to tunnel: TunnelClientConnection) async throws {
        let settings = try IPTunnelSettings(configuration: try await Self.openFlow(tunnel: tunnel, link: link, options: options).configuration)
        let previous = current.withLockedValue { $0 }
        guard settings != previous else {
            logger.notice("IP tunnel back on \(deviceName) with the same addresses \(settings.leaseDescription)")
            return
        }
        logger.notice("IP tunnel back on \(deviceName) with new settings: \(settings.leaseDescription) (was \(previous.leaseDescription))")
        var addressOnly = previous
        addressOnly.address = settings.address
        addressOnly.prefixLength = settings.prefixLength
        if addressOnly == settings, let old = previous.address, let new = settings.address {
            // A new lease alone: swapped under the routes in place, so nothing leaks around the tunnel meanwhile.
            try network.replaceAddress(old, prefixLength: previous.prefixLength, with: new, prefixLength: settings.prefixLength, device: deviceName)
        } else {
            try network.undoAll()
            try Self.apply(settings, options: options, server: tunnel.serverAddress, device: deviceName, network: network, logger: logger)
        }
        current.withLockedValue { $0 = settings }
        routeWatch?.update(TunnelRouteCover(settings, applyRoutes: options.applyRoutes, server: tunnel.serverAddress.flatMap(IPAddress.init)?.unmapped, device: deviceName))
    }

    private static func install(_ killSwitch: KillSwitchRules, guardrail: LinuxNetworkConfigurator, logger: Logger) throws {
        guard SystemCommandRunner().locate("nft") != nil else { throw KillSwitchError.nftMissing }
        try guardrail.loadFirewallTable(family: "inet", name: killSwitch.tableName, script: killSwitch.script)
        logger.notice("kill switch \(killSwitch.summary): nothing leaves outside the tunnel until it stops")
    }

    private static func apply(
        _ settings: IPTunnelSettings, options: IPTunnelOptions, server: SocketAddress?, device: String, network: LinuxNetworkConfigurator,
        logger: Logger
    ) throws {
        let mtu = options.mtu ?? settings.mtu ?? 1400
        if settings.ipv6 != nil, mtu < IPTunnelSettings.minimumIPv6MTU {
            throw IPTunnelError("the server offers IPv6, which needs an MTU of at least \(IPTunnelSettings.minimumIPv6MTU), not \(mtu); raise --mtu")
        }
        try network.setLinkUp(device: device, mtu: mtu)
        if let address = settings.address {
            try network.addAddress(address, prefixLength: settings.prefixLength, device: device)
        }
        if let ipv6 = settings.ipv6 {
            try network.addAddress(ipv6.address, prefixLength: ipv6.prefixLength, device: device)
        }
        if options.applyRoutes {
            try applyRoutes(settings, device: device, server: server, network: network)
        }
        if let plan = dnsPlan(settings, options: options) {
            if case .leftAlone(let reason) = try network.setDNS(plan, device: device) {
                logger.warning("DNS not applied: \(reason)")
            }
        }
    }

    /// The pushed DNS as `--dns` asks; a tunnel carries everything when its routes (not given, or off) send all of a family through it.
    static func dnsPlan(_ settings: IPTunnelSettings, options: IPTunnelOptions) -> DNSPlan? {
        return DNSPlan.decide(
            mode: options.dns, servers: settings.dnsServers, searchDomains: settings.searchDomains, matchDomains: settings.matchDomains,
            matchDomainsNoSearch: settings.matchDomainsNoSearch, tunnelCarriesEverything: options.applyRoutes && settings.carriesEverything)
    }

    /// Opens the IP flow with the device as its local end; returns the pushed configuration and how
    /// the flow carries super-packets (offered when the device takes them whole, PROTOCOL.md B8).
    private static func openFlow(
        tunnel: TunnelClientConnection, link: NIOLoopBound<DeviceLink>, options: IPTunnelOptions
    ) async throws -> (configuration: [String: PropertyListValue], path: SuperPacketPath) {
        let promise = tunnel.eventLoop.makePromise(of: ([String: PropertyListValue], SuperPacketPath).self)
        tunnel.eventLoop.execute {
            // The endpoint is made when the open is sent; it carries packets once the answer decided its path.
            var made: DeviceFlowEndpoint?
            let offer = SuperPacketPath.clientOffers(options.offerSuperPackets, device: link.value.device)
            tunnel.multiplexer.openFlow(.ip(offersSuperPackets: offer)) { reporter in
                let endpoint = DeviceFlowEndpoint(link: link.value, reporter: reporter)
                made = endpoint
                return .ip(endpoint)
            } completion: { result in
                switch result {
                case .success(let configuration):
                    let path = SuperPacketPath(offered: offer, answer: configuration)
                    made?.attach(path: path)
                    promise.succeed((configuration ?? [:], path))
                case .failure(let failure):
                    promise.fail(IPTunnelError(refusal: failure.result))
                }
            }
        }
        return try await promise.futureResult.get()
    }

    /// The pushed routes, or everything (as two /1 routes, so the original
    /// default route stays for the tunnel server itself, which gets a host route).
    private static func applyRoutes(_ settings: IPTunnelSettings, device: String, server: SocketAddress?, network: LinuxNetworkConfigurator) throws {
        try applyIPv6Routes(settings, device: device, server: server, network: network)
        guard settings.address != nil else {
            // IPv6 only: a full tunnel must not let IPv4 leak around it, but keeps its way to an IPv4 server.
            if settings.ipv6?.routes == nil {
                if let host = server.flatMap(IPAddress.init)?.unmapped, case .v4(let host) = host {
                    try network.pinHostRoute(to: host)
                }
                try network.blackholeIPv4()
            }
            return
        }
        if let routes = settings.routes {
            for route in routes {
                try network.addRoute(route, device: device)
            }
            return
        }
        if let host = server.flatMap(IPAddress.init)?.unmapped, case .v4(let host) = host {
            try network.pinHostRoute(to: host)
        }
        for half in ["0.0.0.0/1", "128.0.0.0/1"] {
            try network.addRoute(try IPv4Network(parsing: half), device: device)
        }
        // Without an IPv6 lease the tunnel carries IPv4 only: IPv6 must not leak around it.
        if settings.ipv6 == nil {
            try network.blackholeIPv6()
        }
    }

    /// The pushed IPv6 routes, or with IPv6 offered and no routes, all IPv6
    /// (two /1 routes, keeping a host route to an IPv6 tunnel server outside).
    private static func applyIPv6Routes(_ settings: IPTunnelSettings, device: String, server: SocketAddress?, network: LinuxNetworkConfigurator) throws {
        guard let ipv6 = settings.ipv6 else { return }
        if let routes = ipv6.routes {
            for route in routes {
                try network.addRoute(route, device: device)
            }
            return
        }
        if let host = server.flatMap(IPAddress.init)?.unmapped, case .v6(let host) = host {
            try network.pinHostRoute(to: host)
        }
        for half in ["::/1", "8000::/1"] {
            try network.addRoute(try IPv6Network(parsing: half), device: device)
        }
    }

    /// Removes the routes, addresses and DNS settings, then the kill switch, and the device.
    public func stop() {
        // First: the routes about to be removed are not news.
        routeWatch?.stop()
        do {
            try network.undoAll()
        } catch {
            logger.warning("could not undo all network settings", metadata: ["reason": "\(error)"])
        }
        do {
            try guardrail.undoAll()
            if killSwitch != nil { logger.notice("kill switch removed") }
        } catch {
            logger.warning("could not remove the kill switch", metadata: ["reason": "\(error)"])
        }
        device.close()
        logger.notice("IP tunnel on \(deviceName) removed")
    }
}

/// The device's side of the IP flow of whichever tunnel is up: packets read
/// from the device go to that flow, or nowhere while there is none.
final class DeviceLink {
    let device: PacketFlow
    fileprivate weak var endpoint: DeviceFlowEndpoint?

    init(device: PacketFlow, eventLoop: EventLoop) {
        self.device = device
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        device.startReading(on: eventLoop) { packets in
            bound.value.endpoint?.forward(packets)
        }
    }
}

/// One tunnel's IP flow, with the device as its local end. Only IPv4 and IPv6 pass.
final class DeviceFlowEndpoint: PacketFlowEndpoint {
    private let link: DeviceLink
    private let reporter: FlowReporter
    /// Whether super-packets cross the flow whole (PROTOCOL.md B8); decided once, as the flow opens.
    private(set) var path = SuperPacketPath.segmented
    private let allocator = ByteBufferAllocator()

    init(link: DeviceLink, reporter: FlowReporter) {
        self.link = link
        self.reporter = reporter
    }

    /// The flow is open: from now on the device's packets go to it.
    func attach(path: SuperPacketPath) {
        self.path = path
        link.endpoint = self
    }

    fileprivate func forward(_ packets: [TunnelPacket]) {
        // A tunnel that is gone is not worth cutting packets for.
        guard reporter.sink != nil else { return }
        var malformed = 0
        let packets = path.toPeer(packets, allocator: allocator, malformed: &malformed)
        guard packets.count > PacketFlowLimits.maximumBatchSize else {
            reporter.didReadPackets(packets)
            return
        }
        for slice in packets.packetBatches {
            reporter.didReadPackets(Array(slice))
        }
    }

    func writePackets(_ packets: [TunnelPacket]) {
        // The version nibble decides, not the protocol number (PROTOCOL.md A2);
        // super-packets only where they were agreed, and whole.
        link.device.writePackets(packets.filter { $0.ipVersion != nil && path.admitsFromPeer($0) })
    }

    /// The flow (or its tunnel) ended; the device stays for the next tunnel.
    func close() {
        if link.endpoint === self {
            link.endpoint = nil
        }
    }
}

public struct IPTunnelError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }

    /// The server's answer to the IP flow's `open` (PROTOCOL.md A4), said as what to do.
    init(refusal result: TunnelConnectionOpenResult) {
        switch result {
        case .refused:
            description = "the server refused the IP tunnel: its address pool is exhausted (result 3); try again when a client leaves, or widen its IPv4 Pool"
        case .internalError:
            description = "the server has no IP layer, or could not set up its side (result 5): start it with --tun, or with a --config that has an IPv4 Pool; its log says which"
        default:
            description = "the server refused the IP tunnel (result \(result.rawValue), \(result))"
        }
    }
}
