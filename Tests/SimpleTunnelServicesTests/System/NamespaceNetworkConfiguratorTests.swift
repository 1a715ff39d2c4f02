import Foundation
import Testing
@testable import SimpleTunnelServices

/// The configurator against a real kernel, inside throwaway namespaces.
@Suite("Network configurator in a network namespace", .serialized, .timeLimit(.minutes(3)))
struct NamespaceNetworkConfiguratorTests {
    /// A namespace with a veth pair d0/d1 inside it (the dummy module is often
    /// missing), d1 up so d0 gets a carrier; and a way to read `ip` there.
    static func namespaceWithVeth(_ lab: NetworkNamespaceLab) throws -> (String, ([String]) throws -> String) {
        let namespace = try lab.makeNamespace()
        _ = try lab.runner.runChecked(["ip", "-n", namespace, "link", "add", "d0", "type", "veth", "peer", "name", "d1"])
        _ = try lab.runner.runChecked(["ip", "-n", namespace, "link", "set", "d1", "up"])
        return (namespace, { arguments in try lab.runner.runChecked(["ip", "-n", namespace] + arguments).standardOutput })
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root and `ip netns`"))
    func everythingAddedIsGoneAfterUndo() throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let (namespace, show) = try Self.namespaceWithVeth(lab)
        let forwarding = { try lab.run(in: namespace, ["sysctl", "-n", "net.ipv4.ip_forward"]).standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) }
        let addressesBefore = try show(["-4", "address", "show", "dev", "d0"])
        let routesBefore = try show(["route"])
        #expect(!(try show(["-6", "route"]).contains("blackhole")))
        let forwardingBefore = try forwarding()

        let configurator = LinuxNetworkConfigurator(namespace: namespace)
        try configurator.setLinkUp(device: "d0", mtu: 1300)
        try configurator.addAddress(IPv4Address(10, 201, 0, 1), prefixLength: 24, device: "d0")
        try configurator.addRoute(try IPv4Network(parsing: "198.51.100.0/24"), via: IPv4Address(10, 201, 0, 254))
        try configurator.addRoute(try IPv4Network(parsing: "203.0.113.0/24"), device: "d0")
        try configurator.blackholeIPv6()
        try configurator.setIPv4Forwarding(forwardingBefore != "1")
        let lookup = try configurator.route(to: IPv4Address(198, 51, 100, 9))
        #expect(lookup.gateway == IPv4Address(10, 201, 0, 254) && lookup.device == "d0")
        #expect(lookup.preferredSource == IPv4Address(10, 201, 0, 1))

        #expect(try show(["link", "show", "dev", "d0"]).contains("mtu 1300"))
        #expect(try show(["-4", "address", "show", "dev", "d0"]).contains("inet 10.201.0.1/24"))
        let routes = try show(["route"])
        #expect(routes.contains("198.51.100.0/24 via 10.201.0.254 dev d0"))
        #expect(routes.contains("203.0.113.0/24 dev d0"))
        let routes6 = try show(["-6", "route"])
        #expect(routes6.contains("blackhole ::/1") && routes6.contains("blackhole 8000::/1"))
        #expect(try forwarding() != forwardingBefore)

        try configurator.undoAll()
        #expect(try show(["-4", "address", "show", "dev", "d0"]) == addressesBefore)
        #expect(try show(["route"]) == routesBefore)
        // Compare only blackholes: link-local routes come and go with the link's state.
        #expect(!(try show(["-6", "route"]).contains("blackhole")))
        #expect(try forwarding() == forwardingBefore)
        let link = try show(["link", "show", "dev", "d0"])
        #expect(link.contains("mtu 1500") && link.contains("state DOWN"))
    }

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, `ip netns` and python3"))
    func aHostRouteIsPinnedToTheGatewayAcrossAVethPair() throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let client = try lab.makeNamespace()
        let router = try lab.makeNamespace()
        try lab.addVethPair((client, "veth0", "10.202.0.1/24"), (router, "veth0", "10.202.0.2/24"))
        _ = try lab.runner.runChecked(["ip", "-n", client, "route", "add", "default", "via", "10.202.0.2"])
        try lab.enableForwarding(in: router)

        let configurator = LinuxNetworkConfigurator(namespace: client)
        let pinned = try configurator.pinHostRoute(to: IPv4Address(192, 0, 2, 9))
        #expect(pinned?.gateway == IPv4Address(10, 202, 0, 2) && pinned?.device == "veth0")
        let routes = try lab.runner.runChecked(["ip", "-n", client, "route"]).standardOutput
        #expect(routes.contains("192.0.2.9 via 10.202.0.2 dev veth0"))
        #expect(try configurator.pinHostRoute(to: IPv4Address(10, 202, 0, 1)) == nil, "a local address needs no pin")

        // The lab's veth pair really carries traffic.
        let ping = try lab.run(in: client, ["python3", "-c", NamespaceScripts.ping, "10.202.0.2", "3"], check: false)
        #expect(ping.status == 0, "\(ping.standardOutput) \(ping.standardError)")

        try configurator.undoAll()
        #expect(!(try lab.runner.runChecked(["ip", "-n", client, "route"]).standardOutput.contains("192.0.2.9")))
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root and `ip netns`"))
    func dnsInANamespaceGoesToItsOwnResolvConf() throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let namespace = try lab.makeNamespace()
        let rootResolvConf = FileManager.default.contents(atPath: "/etc/resolv.conf")

        let configurator = LinuxNetworkConfigurator(namespace: namespace)
        try configurator.setDNS(servers: [.v4(IPv4Address(10, 203, 0, 53))], searchDomains: ["lab.example"], device: "stun0")
        let seen = try lab.run(in: namespace, ["cat", "/etc/resolv.conf"]).standardOutput
        #expect(seen.contains("nameserver 10.203.0.53") && seen.contains("search lab.example"))
        #expect(FileManager.default.contents(atPath: "/etc/resolv.conf") == rootResolvConf, "the machine's own resolv.conf is untouched")

        try configurator.undoAll()
        #expect(!FileManager.default.fileExists(atPath: "/etc/netns/\(namespace)/resolv.conf"))

        try lab.writeResolvConf(for: namespace, "nameserver 10.203.0.54\n")
        #expect(try lab.run(in: namespace, ["cat", "/etc/resolv.conf"]).standardOutput == "nameserver 10.203.0.54\n")

        // A split tunnel's DNS leaves the namespace's file as it is: its public names keep resolving.
        let split = DNSPlan(servers: [.v4(IPv4Address(10, 203, 0, 53))], searchDomains: ["lab.example"], carriesEverything: false)
        guard case .leftAlone = try LinuxNetworkConfigurator(namespace: namespace).setDNS(split, device: "stun0") else {
            Issue.record("a split tunnel's DNS rewrote the namespace's resolv.conf")
            return
        }
        #expect(try lab.run(in: namespace, ["cat", "/etc/resolv.conf"]).standardOutput == "nameserver 10.203.0.54\n")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root and `ip netns`"))
    func aNewAddressReplacesTheOldWithoutTheRoutesThroughTheDeviceLapsing() throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let (namespace, show) = try Self.namespaceWithVeth(lab)
        let routesBefore = try show(["route"])
        let configurator = LinuxNetworkConfigurator(namespace: namespace)
        try configurator.setLinkUp(device: "d0", mtu: 1400)
        try configurator.addAddress(IPv4Address(10, 201, 0, 2), prefixLength: 24, device: "d0")
        try configurator.addRoute(try IPv4Network(parsing: "203.0.113.0/24"), device: "d0")

        // In the same subnet: added first, the new address would be the old one's secondary and
        // vanish with it (this namespace does not promote secondaries), and so would the route.
        try configurator.replaceAddress(IPv4Address(10, 201, 0, 2), prefixLength: 24, with: IPv4Address(10, 201, 0, 3), prefixLength: 24, device: "d0")
        var addresses = try show(["-4", "address", "show", "dev", "d0"])
        #expect(addresses.contains("inet 10.201.0.3/24") && !addresses.contains("10.201.0.2") && !addresses.contains("/32"), "\(addresses)")
        #expect(try show(["route"]).contains("203.0.113.0/24 dev d0"))

        // Another subnet and prefix.
        try configurator.replaceAddress(IPv4Address(10, 201, 0, 3), prefixLength: 24, with: IPv4Address(10, 202, 0, 9), prefixLength: 32, device: "d0")
        addresses = try show(["-4", "address", "show", "dev", "d0"])
        #expect(addresses.contains("inet 10.202.0.9/32") && !addresses.contains("10.201.0."), "\(addresses)")
        #expect(try show(["route"]).contains("203.0.113.0/24 dev d0"))

        // Undo removes the address in place now, and nothing else is left.
        #expect(configurator.pendingUndo.filter { $0.contains("address del") } == ["ip -n \(namespace) address del 10.202.0.9/32 dev d0"])
        try configurator.undoAll()
        #expect(!(try show(["-4", "address", "show", "dev", "d0"]).contains("inet ")))
        #expect(try show(["route"]) == routesBefore)
    }
}
