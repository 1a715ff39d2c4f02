import Logging
import NIOCore

/// How the server's IP layer is brought up: one TUN device for all clients.
public struct ServerIPLayerOptions: Sendable {
    /// Interface name, or a pattern such as `stun%d`.
    public var deviceName = "stun%d"
    /// The server's own address on the device; nil = the address just below the pool.
    public var deviceAddress: IPv4Address?
    /// The server's own IPv6 address on the device, when the configuration offers IPv6; nil = the address just below its pool.
    public var deviceIPv6Address: IPv6Address?
    public var mtu = 1400
    /// Where the addresses of known clients are remembered across restarts; nil: in memory only.
    public var leaseFile: LeaseFile?
    /// Set: leases and sessions are shared with the other servers in this database, and `leaseFile` is not used.
    public var database: (any SharedServerStore)?
    /// Which destinations clients' packets may have: its Deny rules and default denials apply.
    public var destinationPolicy = DestinationPolicy.allowAll
    /// Clients may not reach one another's leases (`--client-to-client` turns it off).
    public var clientIsolation = true

    public init() {}
}

/// A running IP layer and what must be undone when it stops.
public final class ServerIPLayerHandle: Sendable {
    public let layer: ServerIPLayer
    private let network: LinuxNetworkConfigurator

    init(layer: ServerIPLayer, network: LinuxNetworkConfigurator) {
        self.layer = layer
        self.network = network
    }

    /// Closes the device and removes the addresses and routes it was given.
    public func stop(logger: Logger) {
        layer.router.stop()
        do {
            try network.undoAll()
        } catch {
            logger.warning("could not undo all network settings of the IP layer", metadata: ["reason": "\(error)"])
        }
    }
}

extension ServerIPLayer {
    /// Creates the TUN device, gives it the server's address and a route for
    /// the pool, and starts routing. Throws, leaving nothing behind, when the
    /// device cannot be made (not root, no /dev/net/tun) or configured.
    public static func start(
        configuration: TunnelServerConfiguration,
        options: ServerIPLayerOptions,
        metrics: TunnelServerMetrics? = nil,
        logger: Logger
    ) throws -> ServerIPLayerHandle {
        let pool = configuration.offersIPv4 ? configuration.pool : nil
        let address = try pool.map { pool throws(ServerIPLayerError) in try ipv4DeviceAddress(for: pool, options: options) }
        let address6 = try configuration.ipv6Pool.map { pool6 throws(ServerIPLayerError) in
            try ipv6DeviceAddress(for: pool6, options: options)
        }
        // The lease file first: a bad one stops the server before anything is changed.
        let addressPool: any AddressLeasing =
            if let database = options.database {
                database.addressLeasing(range: pool, ipv6Range: configuration.ipv6Pool)
            } else {
                try AddressPool(range: pool, ipv6Range: configuration.ipv6Pool, file: options.leaseFile, logger: logger)
            }
        let device = try TUNDevice.open(name: options.deviceName, logger: logger)
        let network = LinuxNetworkConfigurator(logger: logger)
        do {
            try network.setLinkUp(device: device.name, mtu: options.mtu)
            if let address, let pool {
                try network.addAddress(address, prefixLength: 32, device: device.name)
                for prefix in PoolRoutes.ipv4(pool: pool, server: address) {
                    try network.addRoute(prefix, device: device.name)
                }
            }
            if let address6, let pool6 = configuration.ipv6Pool {
                try network.addAddress(address6, prefixLength: 128, device: device.name)
                for prefix in PoolRoutes.ipv6(pool: pool6, server: address6) {
                    try network.addRoute(prefix, device: device.name)
                }
            }
        } catch {
            try? network.undoAll()
            device.close()
            throw error
        }
        let isolation = options.clientIsolation ? ClientIsolation(ipv4Pool: pool, ipv6Pool: configuration.ipv6Pool) : nil
        let router = PacketRouter(device: device, policy: options.destinationPolicy, isolation: isolation, metrics: metrics, logger: logger)
        router.start()
        let layer = ServerIPLayer(
            pool: addressPool, router: router, configuration: configuration, metrics: metrics,
            serverAddresses: [address.map(IPAddress.v4), address6.map(IPAddress.v6)].compactMap { $0 })
        logger.notice(
            "IP layer on \(device.name): \(Self.describe(server: address, pool: pool, server6: address6, pool6: configuration.ipv6Pool)), MTU \(options.mtu)",
            metadata: [
                // After a restart, with a lease file: how many known clients it gave back.
                "leases": "\(options.database.map { "\($0)" } ?? options.leaseFile.map { "\($0.path), \((addressPool as? AddressPool)?.rememberedCount ?? 0) remembered" } ?? "in memory")",
                // What every client is told to send through the tunnel: the line an operator checks first.
                "clients-route": "\(Self.describeClientsRoute(configuration))",
            ]
        )
        return ServerIPLayerHandle(layer: layer, network: network)
    }

    /// What clients are told to route through the tunnel, each family offered:
    /// `all traffic (no Routes)`, `nothing (an empty Routes)` or the routes; IPv6's after `IPv6 `.
    static func describeClientsRoute(_ configuration: TunnelServerConfiguration) -> String {
        func describe(_ routes: [String]?, key: String) -> String {
            guard let routes else { return "all traffic (no \(key))" }
            return routes.isEmpty ? "nothing (an empty \(key))" : routes.joined(separator: ", ")
        }
        var parts: [String] = []
        if configuration.offersIPv4 { parts.append(describe(configuration.routes?.map(\.description), key: "Routes")) }
        if configuration.ipv6Pool != nil { parts.append("IPv6 " + describe(configuration.ipv6Routes?.map(\.description), key: "IPv6.Routes")) }
        return parts.joined(separator: "; ")
    }

    /// `server 10.90.0.1, pool 10.90.0.2-10.90.0.254`, then `IPv6 server …, IPv6 pool …` when offered.
    private static func describe(server: IPv4Address?, pool: ClosedRange<IPv4Address>?, server6: IPv6Address?, pool6: ClosedRange<IPv6Address>?) -> String {
        var parts: [String] = []
        if let server, let pool { parts.append("server \(server), pool \(pool.lowerBound)-\(pool.upperBound)") }
        if let server6, let pool6 { parts.append("IPv6 server \(server6), IPv6 pool \(pool6.lowerBound)-\(pool6.upperBound)") }
        return parts.joined(separator: ", ")
    }

    /// The server's own IPv4 address: `--tun-address`, or the one just below the pool.
    static func ipv4DeviceAddress(for pool: ClosedRange<IPv4Address>, options: ServerIPLayerOptions) throws(ServerIPLayerError) -> IPv4Address {
        guard let address = options.deviceAddress ?? defaultDeviceAddress(for: pool) else {
            throw ServerIPLayerError("the pool \(pool.lowerBound)-\(pool.upperBound) leaves no address below it for the server; give --tun-address")
        }
        guard !pool.contains(address) else {
            throw ServerIPLayerError("the server's tunnel address \(address) is inside the pool \(pool.lowerBound)-\(pool.upperBound)")
        }
        return address
    }

    /// IPv6 needs links of at least this MTU (RFC 8200); the kernel turns IPv6 off on a smaller one.
    static let minimumIPv6MTU = 1280

    /// Checks what offering IPv6 needs and returns the server's own IPv6 address.
    static func ipv6DeviceAddress(for pool: ClosedRange<IPv6Address>, options: ServerIPLayerOptions) throws(ServerIPLayerError) -> IPv6Address {
        guard options.mtu >= minimumIPv6MTU else {
            throw ServerIPLayerError("the configuration offers IPv6, which needs an MTU of at least \(minimumIPv6MTU), not \(options.mtu); raise --mtu")
        }
        guard let address = options.deviceIPv6Address ?? defaultDeviceAddress(for: pool) else {
            throw ServerIPLayerError("the IPv6 pool \(pool.lowerBound)-\(pool.upperBound) leaves no address below it for the server; start it one address higher, or give --tun-address")
        }
        guard !pool.contains(address) else {
            throw ServerIPLayerError("the server's IPv6 tunnel address \(address) is inside the pool \(pool.lowerBound)-\(pool.upperBound)")
        }
        return address
    }

    /// The address just below the IPv6 pool, unless that is a subnet-router anycast address (interface identifier 0).
    static func defaultDeviceAddress(for pool: ClosedRange<IPv6Address>) -> IPv6Address? {
        guard pool.lowerBound.rawValue & 0xFFFF_FFFF_FFFF_FFFF > 1 else { return nil }
        return IPv6Address(rawValue: pool.lowerBound.rawValue - 1)
    }

    /// The address just below the pool, unless that is a network address (x.x.x.0).
    static func defaultDeviceAddress(for pool: ClosedRange<IPv4Address>) -> IPv4Address? {
        guard pool.lowerBound.rawValue & 0xFF > 1 else { return nil }
        return IPv4Address(rawValue: pool.lowerBound.rawValue - 1)
    }
}

public struct ServerIPLayerError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
