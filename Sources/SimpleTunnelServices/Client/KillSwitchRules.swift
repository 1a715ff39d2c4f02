/// The kill switch of a full tunnel: an nftables table of the client's own
/// that lets out only what the tunnel is meant to let out, so that no route
/// anyone adds (a DHCP option 121 route more specific than the tunnel's, a
/// LAN prefix that covers a destination, a spoofed server address) and no
/// lapse (a reconnection, a server that is away) sends traffic in the clear.
///
/// Accepted in the output and forward hooks, both families: the TUN device,
/// loopback, the client's own socket to the server (marked with SO_MARK, so
/// that it is recognised by what it is, not by an address someone may spoof),
/// the LAN ranges the user lists (`--allow-lan`), and what keeps the LAN link
/// itself alive (IPv6 neighbour discovery, a DHCPv4 renewal), which carries
/// no one's data. Everything else is dropped and counted.
public struct KillSwitchRules: Sendable, Equatable {
    /// The mark on the tunnel's socket: "ST" in the high bits, clear of the
    /// small marks and the low bits other tools (WireGuard, Tailscale) use.
    public static let socketMark: UInt32 = 0x5354_0000

    public var device: String
    public var allowedIPv4: [IPv4Network]
    public var allowedIPv6: [IPv6Network]

    public init(device: String, allowedLAN: [IPNetworkChoice] = []) {
        self.device = device
        self.allowedIPv4 = allowedLAN.compactMap(\.ipv4)
        self.allowedIPv6 = allowedLAN.compactMap(\.ipv6)
    }

    /// `inet simpletunnel_client_DEVICE`: one table per tunnel device, so two
    /// clients on one machine each have their own and remove only their own.
    public var tableName: String {
        "simpletunnel_client_" + String(device.map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
    }

    /// Whether a tunnel with these settings gets a kill switch: only a full
    /// one (routes applied, every family it has routed entirely through it).
    /// A split tunnel means other traffic should go out directly.
    public static func wanted(_ settings: IPTunnelSettings, options: IPTunnelOptions) -> Bool {
        options.killSwitch && options.applyRoutes && settings.carriesEverything
    }

    /// One nft script, applied as one transaction: it replaces a table a
    /// previous instance left behind (declare, delete, define), so there is
    /// no moment with neither the old table nor the new.
    public var script: String {
        let name = tableName
        let device = Self.quoted(self.device)
        var lan: [String] = []
        if !allowedIPv4.isEmpty { lan.append("ip daddr { \(allowedIPv4.map(\.description).joined(separator: ", ")) } accept") }
        if !allowedIPv6.isEmpty { lan.append("ip6 daddr { \(allowedIPv6.map(\.description).joined(separator: ", ")) } accept") }
        let output = [
            "type filter hook output priority filter; policy drop;",
            "oifname \"lo\" accept",
            "oifname \(device) accept",
            "meta mark \(Self.markText) accept",
        ] + lan + [
            "icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept",
            "udp sport 68 udp dport 67 accept",
            "counter comment \"dropped by the kill switch\"",
        ]
        let forward = ["type filter hook forward priority filter; policy drop;", "oifname \(device) accept"] + lan + [
            "counter comment \"dropped by the kill switch\""
        ]
        return """
            table inet \(name) {}
            delete table inet \(name)
            table inet \(name) {
              chain output {
            \(output.map { "    " + $0 }.joined(separator: "\n"))
              }
              chain forward {
            \(forward.map { "    " + $0 }.joined(separator: "\n"))
              }
            }
            """
    }

    /// What `status` and the log say.
    public var summary: String {
        let lan = (allowedIPv4.map(\.description) + allowedIPv6.map(\.description))
        return "on (nft table inet \(tableName); LAN allowed: \(lan.isEmpty ? "none" : lan.joined(separator: ", ")))"
    }

    static var markText: String { "0x" + String(socketMark, radix: 16) }

    /// Interface names cannot hold a quote (`IPTunnelPreflight`); quoted all the same.
    private static func quoted(_ name: String) -> String {
        "\"" + name.filter { $0 != "\"" && $0 != "\\" } + "\""
    }
}

/// A network of either family, as `--allow-lan` takes it.
public enum IPNetworkChoice: Sendable, Hashable, CustomStringConvertible {
    case v4(IPv4Network)
    case v6(IPv6Network)

    public init(parsing text: String) throws(NetworkParseError) {
        if text.contains(":") {
            self = .v6(try IPv6Network(parsing: text))
        } else {
            self = .v4(try IPv4Network(parsing: text))
        }
    }

    public var description: String {
        switch self {
        case .v4(let network): network.description
        case .v6(let network): network.description
        }
    }

    var ipv4: IPv4Network? {
        guard case .v4(let network) = self else { return nil }
        return network
    }

    var ipv6: IPv6Network? {
        guard case .v6(let network) = self else { return nil }
        return network
    }
}

/// The kill switch is wanted and cannot be set up; the message says what to do.
public struct KillSwitchError: Error, CustomStringConvertible {
    public var description: String

    static let nftMissing = KillSwitchError(
        description: "the tunnel carries everything, and its kill switch needs nftables, whose nft command is not installed: "
            + "install the nftables package, or pass --kill-switch off to run the full tunnel without one")
}
