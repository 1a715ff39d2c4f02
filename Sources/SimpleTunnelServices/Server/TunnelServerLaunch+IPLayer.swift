/// The IP layer a launch starts, decided with the rest of the settings.
public struct IPLayerLaunch: Sendable {
    /// The TUN device's settings, the destination policy and where leases are kept.
    public var options: ServerIPLayerOptions
    /// An explicit `--tun`, as OpenVPN and wg-quick do: failing to set the device up stops the server.
    public var isRequired: Bool
}

extension TunnelServerLaunch {
    /// The host's network changes only when asked: `--tun`, or a configuration
    /// file with a pool; `--no-ip-layer` refuses IP tunnels whatever the file says.
    static func ipLayer(
        _ options: TunnelServerLaunchOptions, configuration: TunnelServerConfiguration, policy: DestinationPolicy,
        database: (any SharedServerStore)?
    ) -> IPLayerLaunch? {
        let asked = options.tun != nil || (options.configurationPath != nil && configuration.poolIsConfigured)
        guard asked, !options.noIPLayer else { return nil }
        var device = ServerIPLayerOptions()
        device.deviceName = options.tun ?? "stun%d"
        device.deviceAddress = options.tunAddress.lazy.compactMap(IPv4Address.init).first
        device.deviceIPv6Address = options.tunAddress.lazy.compactMap(IPv6Address.init).first
        device.mtu = options.mtu
        device.destinationPolicy = policy
        device.clientIsolation = !options.clientToClient && configuration.server.clientIsolation != false
        device.database = database
        // With a database, leases are shared there instead.
        if database == nil {
            device.leaseFile = LeaseFile(path: (options.stateDirectory ?? SelfSignedIdentity.defaultDirectory()) + "/" + LeaseFile.defaultName)
        }
        return IPLayerLaunch(options: device, isRequired: options.tun != nil)
    }
}
