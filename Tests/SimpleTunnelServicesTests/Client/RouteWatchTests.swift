import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

@Suite("Routes that win over the tunnel's, by value", .timeLimit(.minutes(3)))
struct RouteWatchTests {
    func network(_ text: String) throws -> IPNetworkChoice { try IPNetworkChoice(parsing: text) }

    @Test func monitorLinesParseToAddedUnicastRoutesOfTheMainTableOnly() throws {
        #expect(MonitoredRoute(line: "198.51.100.0/24 via 198.18.11.1 dev uplink")
            == MonitoredRoute(destination: try network("198.51.100.0/24"), device: "uplink", gateway: "198.18.11.1"))
        #expect(MonitoredRoute(line: "192.0.2.0/24 dev uplink proto kernel scope link src 192.0.2.5")?.destination == (try network("192.0.2.0/24")))
        #expect(MonitoredRoute(line: "2000::/3 via fd00:11::1 dev uplink metric 1024 pref medium")?.destination == (try network("2000::/3")))
        #expect(MonitoredRoute(line: "unicast 10.1.0.0/16 dev eth1")?.device == "eth1")
        #expect(MonitoredRoute(line: "203.0.113.9 via 198.18.11.1 dev uplink")?.destination == (try network("203.0.113.9/32")))
        for ignored in [
            "Deleted 198.51.100.0/24 via 198.18.11.1 dev uplink",
            "local 192.0.2.5 dev uplink table local proto kernel scope host src 192.0.2.5",
            "broadcast 192.0.2.255 dev uplink table local proto kernel scope link src 192.0.2.5",
            "blackhole ::/1 dev lo metric 1024 pref medium",
            "unreachable 198.51.100.77 dev lo",
            "multicast ff00::/8 dev uplink table local proto kernel metric 256 pref medium",
            "default via 198.18.11.1 dev uplink",
            "10.0.0.0/8 via 10.1.1.1 dev eth0 table 100",
            "",
            "garbage here",
        ] {
            #expect(MonitoredRoute(line: ignored) == nil, "\(ignored)")
        }
    }

    func fullIPv4Settings() throws -> IPTunnelSettings {
        try IPTunnelSettings(configuration: ["IPv4": .dictionary(["Address": .string("10.90.0.2"), "Netmask": .string("255.255.255.255")])])
    }

    @Test func aFullIPv4TunnelIsBeatenByAnyLongerUnicastPrefixButItsOwnDeviceAndTheServersRoute() throws {
        let cover = TunnelRouteCover(try fullIPv4Settings(), applyRoutes: true, server: IPAddress("198.18.11.1"), device: "stun1")
        func beaten(_ line: String) -> String? { MonitoredRoute(line: line).flatMap(cover.overridden(by:))?.description }
        #expect(beaten("198.51.100.0/24 via 198.18.11.1 dev uplink") == "128.0.0.0/1")
        #expect(beaten("10.20.0.0/16 via 198.18.11.1 dev uplink") == "0.0.0.0/1")
        #expect(beaten("203.0.113.0/24 via 198.18.11.1 dev uplink") == "128.0.0.0/1")
        #expect(beaten("0.0.0.0/2 via 198.18.11.1 dev uplink") == "0.0.0.0/1", "TunnelVision's /2s")
        // IPv6 is blackholed around an IPv4-only tunnel: a 2000::/3 route gets past the blackhole.
        #expect(beaten("2000::/3 via fd00:11::1 dev uplink") == "::/1")
        #expect(beaten("10.90.0.0/24 dev stun1") == nil, "the tunnel's own device")
        #expect(beaten("198.18.11.1 via 198.18.11.254 dev uplink") == nil, "the route to the server itself")
        #expect(beaten("169.254.0.0/16 dev uplink scope link") == nil)
        #expect(beaten("fe80::/64 dev uplink proto kernel metric 256") == nil)
        #expect(beaten("0.0.0.0/1 via 198.18.11.1 dev uplink") == nil, "as long as the tunnel's: the tunnel's route stays")
    }

    @Test func aSplitTunnelIsBeatenOnlyInsideItsRoutesAndNoRoutesMeansNoWatch() throws {
        var settings = try fullIPv4Settings()
        settings.routes = [try IPv4Network(parsing: "198.18.2.0/24")]
        let cover = TunnelRouteCover(settings, applyRoutes: true, server: nil, device: "stun1")
        #expect(cover.ipv6.isEmpty, "a split tunnel blackholes nothing")
        #expect(MonitoredRoute(line: "198.18.2.0/25 via 198.18.11.1 dev uplink").flatMap(cover.overridden(by:)) == (try network("198.18.2.0/24")))
        #expect(MonitoredRoute(line: "198.51.100.0/24 via 198.18.11.1 dev uplink").flatMap(cover.overridden(by:)) == nil)
        #expect(TunnelRouteCover(settings, applyRoutes: false, server: nil, device: "stun1").isEmpty)
    }

    @Test func theMonitorsOutputIsSplitIntoLinesAndAnOverlongLineIsDropped() throws {
        var lines: [String] = []
        let handler = RouteMonitorHandler { lines.append($0) }
        let channel = EmbeddedChannel(handler: handler)
        try channel.writeInbound(ByteBuffer(string: "198.51.100.0/24 via 1.2.3.4 dev a\n2000::/3 dev"))
        try channel.writeInbound(ByteBuffer(string: " b\n" + String(repeating: "x", count: 5000)))
        try channel.writeInbound(ByteBuffer(string: "yyy\n10.0.0.0/8 dev c\n"))
        #expect(lines == ["198.51.100.0/24 via 1.2.3.4 dev a", "2000::/3 dev b", "10.0.0.0/8 dev c"])
    }
}
