import Logging
import NIOCore

/// What `tunnel-client ip` was asked for.
public struct IPTunnelOptions: Sendable {
    /// Interface name, or a pattern such as `stun%d`.
    public var deviceName = "stun%d"
    /// Apply the pushed routes (or route everything); off with `--no-routes`.
    public var applyRoutes = true
    /// Apply the pushed DNS settings (`--dns`).
    public var applyDNS = false
    public var mtu = 1400

    public init() {}
}

/// The settings an IP flow's configuration carries (PROTOCOL.md A5).
public struct IPTunnelSettings: Sendable, Hashable {
    public var address: IPv4Address
    public var prefixLength: Int
    /// Nil: route everything through the tunnel.
    public var routes: [IPv4Network]?
    public var dnsServers: [IPAddress]
    public var searchDomains: [String]

    public init(configuration: [String: PropertyListValue]) throws {
        let ipv4 = configuration["IPv4"]?.dictionaryValue ?? [:]
        guard let addressText = ipv4["Address"]?.stringValue, let address = IPv4Address(addressText) else {
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
        let dns = configuration["DNS"]?.dictionaryValue ?? [:]
        self.dnsServers = (dns["Servers"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { IPAddress($0) } }
        self.searchDomains = (dns["SearchDomains"]?.arrayValue ?? []).compactMap(\.stringValue)
    }
}

/// A full IP tunnel on this machine: a TUN device carrying the IP flow, with
/// the address, routes (and DNS, when asked) the server pushed. Everything it
/// changed is removed by `stop()`.
public final class IPTunnelSession: Sendable {
    public let settings: IPTunnelSettings
    public let deviceName: String
    private let device: TUNDevice
    private let network: LinuxNetworkConfigurator
    private let logger: Logger

    private init(settings: IPTunnelSettings, device: TUNDevice, network: LinuxNetworkConfigurator, logger: Logger) {
        self.settings = settings
        self.deviceName = device.name
        self.device = device
        self.network = network
        self.logger = logger
    }

    public static func start(tunnel: TunnelClientConnection, options: IPTunnelOptions, logger: Logger) async throws -> IPTunnelSession {
        let device = try TUNDevice.open(name: options.deviceName, logger: logger)
        let configuration: [String: PropertyListValue]
        do {
            configuration = try await openFlow(tunnel: tunnel, device: device)
        } catch {
            device.close()
            throw error
        }
        let network = LinuxNetworkConfigurator(logger: logger)
        do {
            let settings = try IPTunnelSettings(configuration: configuration)
            try network.setLinkUp(device: device.name, mtu: options.mtu)
            try network.addAddress(settings.address, prefixLength: settings.prefixLength, device: device.name)
            if options.applyRoutes {
                try applyRoutes(settings, device: device.name, server: tunnel.channel.remoteAddress, network: network)
            }
            if options.applyDNS, !settings.dnsServers.isEmpty {
                try network.setDNS(servers: settings.dnsServers, searchDomains: settings.searchDomains, device: device.name)
            }
            let session = IPTunnelSession(settings: settings, device: device, network: network, logger: logger)
            logger.notice(
                "IP tunnel up on \(device.name): \(settings.address)/\(settings.prefixLength), routes \(options.applyRoutes ? (settings.routes.map { $0.map(\.description).joined(separator: ", ") } ?? "everything") : "none")"
            )
            return session
        } catch {
            try? network.undoAll()
            device.close()
            throw error
        }
    }

    /// Opens the IP flow with the device as its local end; returns the pushed configuration.
    private static func openFlow(tunnel: TunnelClientConnection, device: TUNDevice) async throws -> [String: PropertyListValue] {
        let promise = tunnel.eventLoop.makePromise(of: [String: PropertyListValue].self)
        tunnel.eventLoop.execute {
            let endpoint = DeviceFlowEndpoint(device: device)
            let multiplexer = tunnel.multiplexer
            let identifier = multiplexer.openFlow(.ip, endpoint: endpoint) { result in
                switch result {
                case .success(let configuration):
                    endpoint.start(sink: multiplexer, on: tunnel.eventLoop)
                    promise.succeed(configuration ?? [:])
                case .failure(let failure):
                    promise.fail(IPTunnelError("the server refused the IP tunnel: \(failure)"))
                }
            }
            endpoint.identifier = identifier ?? 0
        }
        return try await promise.futureResult.get()
    }

    /// The pushed routes, or everything (as two /1 routes, so the original
    /// default route stays for the tunnel server itself, which gets a host route).
    private static func applyRoutes(_ settings: IPTunnelSettings, device: String, server: SocketAddress?, network: LinuxNetworkConfigurator) throws {
        if let routes = settings.routes {
            for route in routes {
                try network.addRoute(route, device: device)
            }
            return
        }
        if let host = server?.ipAddress.flatMap({ IPv4Address($0) }) {
            try network.pinHostRoute(to: host)
        }
        for half in ["0.0.0.0/1", "128.0.0.0/1"] {
            try network.addRoute(try IPv4Network(parsing: half), device: device)
        }
        // The tunnel carries IPv4 only: IPv6 must not leak around it.
        try network.blackholeIPv6()
    }

    /// Removes the routes, addresses and DNS settings, and the device.
    public func stop() {
        do {
            try network.undoAll()
        } catch {
            logger.warning("could not undo all network settings", metadata: ["reason": "\(error)"])
        }
        device.close()
        logger.notice("IP tunnel on \(deviceName) removed")
    }
}

/// An IP flow's local end on a packet device: packets from the peer go to the
/// device, packets the device reads go to the peer. Only IPv4 and IPv6 pass.
final class DeviceFlowEndpoint: FlowEndpoint {
    private let device: PacketFlow
    var identifier: TunnelConnectionIdentifier = 0

    init(device: PacketFlow) {
        self.device = device
    }

    func start(sink: FlowEventSink, on eventLoop: EventLoop) {
        let identifier = self.identifier
        let boundSink = NIOLoopBound(sink as AnyObject, eventLoop: eventLoop)
        device.startReading(on: eventLoop) { packets in
            (boundSink.value as? FlowEventSink)?.flow(identifier, didReadPackets: packets.map { TunnelPacket(bytes: $0) })
        }
    }

    func writePackets(_ packets: [TunnelPacket]) {
        // The version nibble decides, not the protocol number (PROTOCOL.md A2).
        device.writePackets(packets.filter { $0.ipVersion != nil }.map(\.bytes))
    }

    func close() {
        device.close()
    }

    func write(_ data: ByteBuffer, to destination: TunnelEndpoint?) {}
    func flush() {}
    func setReading(_ enabled: Bool) {}
    func shutdownOutput() {}
}

public struct IPTunnelError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
