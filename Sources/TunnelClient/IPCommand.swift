import ArgumentParser
import Logging
import SimpleTunnelServices

extension DNSMode: ExpressibleByArgument {}

/// `--kill-switch on|off`.
enum KillSwitchSetting: String, ExpressibleByArgument, CaseIterable {
    case on, off
}

struct IP: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ip",
        abstract: "A full IP tunnel over a TUN device (needs root or CAP_NET_ADMIN).",
        discussion: """
            Takes the address the server leases, the routes it pushes (or everything, keeping a \
            route to the server itself outside the tunnel, with IPv6 blackholed so nothing leaks \
            around an IPv4-only tunnel) and, with --dns, its DNS servers. A tunnel that carries everything \
            also gets a kill switch (nftables): nothing but the tunnel, its own connection to the server, \
            loopback and the --allow-lan networks leaves the machine, also while reconnecting. All of it is \
            removed on exit.
            """
    )

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "TUN device name, or a pattern like stun%d.")
    var tun = "stun%d"

    @Flag(name: .customLong("no-routes"), help: "Do not add routes; only the address.")
    var noRoutes = false

    @Option(
        help: """
            Use the server's DNS while the tunnel is up: full (every name), split (only names in the pushed SearchDomains and \
            MatchDomains; needs systemd-resolved), auto (full when the tunnel carries everything, else split; what a bare --dns means) or off.
            """)
    var dns: DNSMode = .off

    @Option(help: "MTU of the TUN device (at least 1280 when the server offers IPv6). Default: the server's (it pushes its own), else 1400.")
    var mtu: Int?

    @Flag(
        name: .customLong("no-super-packets"),
        help: "Do not offer to carry TCP super-packets whole (a Linux server with TUN offloads accepts them); send MTU-sized packets only.")
    var noSuperPackets = false

    @Option(
        name: .customLong("kill-switch"),
        help: """
            on: while a tunnel that carries everything is wanted, drop whatever would leave outside it (a LAN route more \
            specific than the tunnel's, a lapse while reconnecting); needs nftables. off: routes alone (traffic can leak).
            """)
    var killSwitch: KillSwitchSetting = .on

    @Option(
        name: .customLong("allow-lan"),
        help: "A network the kill switch lets out directly, e.g. 192.168.1.0/24 for a printer (repeatable). Hosts there see that traffic in the clear.")
    var allowLAN: [String] = []

    @Option(
        name: .customLong("state-directory"),
        help: """
            Where the client keeps what it changed outside its device (routes, the kill switch, resolv.conf), so that after a crash \
            the next start, or `tunnel-client cleanup`, removes it. Default: /run/simpletunnel-client for root, else \
            $XDG_RUNTIME_DIR/simpletunnel or /tmp/simpletunnel-UID.
            """)
    var stateDirectory: String?

    func validate() throws {
        for network in allowLAN {
            do { _ = try IPNetworkChoice(parsing: network) } catch { throw ValidationError("--allow-lan \(network): \(error)") }
        }
        if !allowLAN.isEmpty, killSwitch == .off {
            throw ValidationError("--allow-lan opens the kill switch to a network; with --kill-switch off every network is reachable already")
        }
        if killSwitch == .on, connection.runAs != nil {
            throw ValidationError(
                "--run-as with the kill switch: each reconnection marks its socket for the kill switch, which needs CAP_NET_ADMIN on "
                    + "the threads --run-as takes it from; pass --kill-switch off with --run-as, or run without --run-as")
        }
        if let mtu, !(576...65535).contains(mtu) {
            throw ValidationError("--mtu \(mtu): expected 576 to 65535")
        }
    }

    func run() async throws {
        let logger = connection.makeLogger()
        // Before connecting: a client that cannot create its device has no business with the server.
        do {
            try IPTunnelPreflight.check(deviceName: tun)
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
        // What a client that crashed left behind goes first; then this one's changes are kept as they are made.
        let folder = stateDirectory ?? NetworkUndoJournal.defaultFolder()
        let journal: NetworkUndoJournal
        do {
            Cleanup.log(try NetworkLeftovers.clean(folder: folder), logger: logger)
            journal = try NetworkUndoJournal.create(in: folder)
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
        defer {
            if let kept = journal.finish() { logger.warning("\(kept)") }
        }
        var options = IPTunnelOptions()
        options.deviceName = tun
        options.applyRoutes = !noRoutes
        options.dns = dns
        options.mtu = mtu
        options.offerSuperPackets = !noSuperPackets
        options.killSwitch = killSwitch == .on
        options.allowedLAN = try allowLAN.map { try IPNetworkChoice(parsing: $0) }
        options.journal = journal
        let ipOptions = options
        // Changing and undoing routes needs CAP_NET_ADMIN; restoring /etc/resolv.conf needs to write root's file.
        let capabilities: Set<Privileges.Capability> = dns != .off ? [.netAdmin, .dacOverride] : [.netAdmin]
        try await connection.run(
            keeping: capabilities, offersNeedTunnel: true, socketMark: killSwitch == .on ? KillSwitchRules.socketMark : nil
        ) { current, status in
            guard let tunnel = current.connection else { throw TunnelClientLaunchError("the tunnel closed before the IP flow could be opened") }
            let session = try await IPTunnelSession.start(tunnel: tunnel, options: ipOptions, status: status, logger: Logger(label: "tunnel-client"))
            let showLease: @Sendable () -> Void = { status.setLease("\(session.settings.leaseDescription) on \(session.deviceName)") }
            showLease()
            status.setKillSwitch(session.killSwitch?.summary)
            return [
                .init(
                    close: { session.stop() },
                    reattach: { tunnel in
                        try await session.reattach(to: tunnel)
                        showLease()
                    })
            ]
        }
    }
}
