import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import SimpleTunnelServices

/// A `CommandRunning` that records commands and answers from a script.
final class ScriptedCommandRunner: CommandRunning {
    private let log = NIOLockedValueBox<[[String]]>([])
    private let answer: @Sendable ([String]) -> CommandResult

    init(_ answer: @escaping @Sendable ([String]) -> CommandResult = { _ in CommandResult(status: 0) }) {
        self.answer = answer
    }

    var commands: [[String]] { log.withLockedValue { $0 } }

    func run(_ command: [String], timeout: Duration) throws(NetworkConfigurationError) -> CommandResult {
        log.withLockedValue { $0.append(command) }
        return answer(command)
    }
}

/// Which commands the configurator issues and how it undoes them, without root.
@Suite("Network configurator commands (PacketFlow)", .timeLimit(.minutes(3)))
struct PacketFlowNetworkConfiguratorTests {
    static let downLink = #"[{"ifname":"stun0","flags":["POINTOPOINT","NOARP"],"mtu":1500}]"#

    @Test func undoRunsInReverseAfterAPartialFailureAndOnlyForWhatSucceeded() throws {
        let runner = ScriptedCommandRunner { command in
            if command.contains("8000::/1") && command.contains("add") {
                return CommandResult(status: 2, standardError: "RTNETLINK answers: Permission denied\n")
            }
            return command.contains("-j") ? CommandResult(status: 0, standardOutput: Self.downLink) : CommandResult(status: 0)
        }
        let configurator = LinuxNetworkConfigurator(runner: runner)
        try configurator.setLinkUp(device: "stun0", mtu: 1400)
        try configurator.addAddress(IPv4Address(10, 0, 0, 5), prefixLength: 32, device: "stun0")
        try configurator.addRoute(try IPv4Network(parsing: "10.0.0.0/8"), device: "stun0")
        let error = #expect(throws: NetworkConfigurationError.self) { try configurator.blackholeIPv6() }
        #expect(error?.description == "`ip -6 route add blackhole 8000::/1` failed with exit status 2: RTNETLINK answers: Permission denied")
        let applied = runner.commands.count
        try configurator.undoAll()
        #expect(Array(runner.commands[applied...]) == [
            ["ip", "-6", "route", "del", "blackhole", "::/1"],
            ["ip", "route", "del", "10.0.0.0/8", "dev", "stun0"],
            ["ip", "address", "del", "10.0.0.5/32", "dev", "stun0"],
            ["ip", "link", "set", "dev", "stun0", "mtu", "1500", "down"],
        ])
        #expect(configurator.pendingUndo.isEmpty)
    }

    @Test func aNamespaceTargetsEveryCommandWithoutEnteringIt() throws {
        let runner = ScriptedCommandRunner { _ in CommandResult(status: 0, standardOutput: "0\n") }
        let configurator = LinuxNetworkConfigurator(namespace: "st-test", runner: runner)
        try configurator.addRoute(try IPv4Network(parsing: "192.0.2.0/24"), via: IPv4Address(10, 0, 0, 1))
        try configurator.setIPv4Forwarding(true)
        #expect(runner.commands == [
            ["ip", "-n", "st-test", "route", "add", "192.0.2.0/24", "via", "10.0.0.1"],
            ["ip", "netns", "exec", "st-test", "sysctl", "-n", "net.ipv4.ip_forward"],
            ["ip", "netns", "exec", "st-test", "sysctl", "-w", "net.ipv4.ip_forward=1"],
        ])
        #expect(configurator.pendingUndo.last == "ip netns exec st-test sysctl -w net.ipv4.ip_forward=0")
    }

    @Test func forwardingAlreadyAsWantedChangesNothing() throws {
        let runner = ScriptedCommandRunner { _ in CommandResult(status: 0, standardOutput: "1\n") }
        let configurator = LinuxNetworkConfigurator(runner: runner)
        try configurator.setIPv4Forwarding(true)
        #expect(runner.commands.count == 1)
        #expect(configurator.pendingUndo.isEmpty)
    }

    @Test func pinningUsesTheCurrentGatewayAndSkipsLocalHosts() throws {
        let runner = ScriptedCommandRunner { command in
            if command.contains("127.0.0.1") {
                return CommandResult(status: 0, standardOutput: #"[{"type":"local","dst":"127.0.0.1","dev":"lo","prefsrc":"127.0.0.1"}]"#)
            }
            return CommandResult(status: 0, standardOutput: #"[{"dst":"203.0.113.7","gateway":"192.168.1.1","dev":"eth0","prefsrc":"192.168.1.20","flags":[],"uid":0,"cache":[]}]"#)
        }
        let configurator = LinuxNetworkConfigurator(runner: runner)
        let pinned = try configurator.pinHostRoute(to: IPv4Address(203, 0, 113, 7))
        #expect(pinned?.gateway == IPv4Address(192, 168, 1, 1))
        #expect(pinned?.device == "eth0")
        #expect(runner.commands.last == ["ip", "route", "add", "203.0.113.7/32", "via", "192.168.1.1", "dev", "eth0"])
        #expect(try configurator.pinHostRoute(to: IPv4Address(127, 0, 0, 1)) == nil)
        #expect(configurator.pendingUndo == ["ip route del 203.0.113.7/32 via 192.168.1.1 dev eth0"])
    }

    @Test func undoTreatsSettingsThatVanishedWithTheirInterfaceAsUndone() throws {
        let undoing = NIOLockedValueBox(false)
        let runner = ScriptedCommandRunner { command in
            guard undoing.withLockedValue({ $0 }) else { return CommandResult(status: 0) }
            if command.contains("route") { return CommandResult(status: 2, standardError: "RTNETLINK answers: No such process") }
            return CommandResult(status: 1, standardError: "RTNETLINK answers: Operation not permitted")
        }
        let configurator = LinuxNetworkConfigurator(runner: runner)
        try configurator.addAddress(IPv4Address(10, 0, 0, 5), prefixLength: 32, device: "stun0")
        try configurator.addRoute(try IPv4Network(parsing: "10.0.0.0/8"), device: "stun0")
        undoing.withLockedValue { $0 = true }
        let error = #expect(throws: NetworkConfigurationError.self) { try configurator.undoAll() }
        guard case .undoIncomplete(let failures) = error else {
            Issue.record("expected undoIncomplete, got \(String(describing: error))")
            return
        }
        #expect(failures.count == 1)
        #expect(failures.first?.description.contains("ip address del 10.0.0.5/32 dev stun0") == true)
        #expect(configurator.pendingUndo.isEmpty, "undo is attempted once, never again")
    }

    @Test func dnsThroughResolvedIsRevertedAsAWhole() throws {
        let runner = ScriptedCommandRunner()
        let configurator = LinuxNetworkConfigurator(dnsMethod: .resolved, runner: runner)
        try configurator.setDNS(servers: [.v4(IPv4Address(10, 0, 0, 1))], searchDomains: ["corp.example"], device: "stun0")
        // A full tunnel's DNS: every name (`~.`), and the default route for names no other link claims.
        #expect(runner.commands == [
            ["resolvectl", "dns", "stun0", "10.0.0.1"],
            ["resolvectl", "domain", "stun0", "corp.example", "~."],
            ["resolvectl", "default-route", "stun0", "yes"],
        ])
        #expect(configurator.pendingUndo == ["resolvectl revert stun0"])
    }

    @Test func aSplitTunnelsDNSThroughResolvedRoutesOnlyItsDomains() throws {
        let runner = ScriptedCommandRunner()
        let configurator = LinuxNetworkConfigurator(dnsMethod: .resolved, runner: runner)
        let plan = DNSPlan(
            servers: [.v4(IPv4Address(10, 0, 0, 1))], searchDomains: ["corp.example"], routingDomains: ["internal.example"], carriesEverything: false)
        #expect(try configurator.setDNS(plan, device: "stun0") == .resolved)
        #expect(runner.commands == [
            ["resolvectl", "dns", "stun0", "10.0.0.1"],
            ["resolvectl", "domain", "stun0", "corp.example", "~internal.example"],
            ["resolvectl", "default-route", "stun0", "no"],
        ])
        #expect(configurator.pendingUndo == ["resolvectl revert stun0"])
    }

    @Test func aSplitTunnelLeavesAPlainResolvConfAloneAndSaysWhatToDo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("st-resolv-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("resolv.conf").path
        let original = "nameserver 192.0.2.53\nsearch home.example\n"
        try original.write(toFile: path, atomically: true, encoding: .utf8)
        let configurator = LinuxNetworkConfigurator(dnsMethod: .resolvConf(path: path), runner: ScriptedCommandRunner())
        let plan = DNSPlan(servers: [.v4(IPv4Address(10, 0, 0, 1))], searchDomains: ["corp.example"], carriesEverything: false)
        guard case .leftAlone(let reason) = try configurator.setDNS(plan, device: "stun0") else {
            Issue.record("a split tunnel rewrote resolv.conf")
            return
        }
        #expect(reason.contains("names in corp.example would go to 10.0.0.1") && reason.contains("--dns full"), "\(reason)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == original, "public names and the home search domain keep working")
        #expect(configurator.pendingUndo.isEmpty)
    }

    @Test func resolvConfIsReplacedInPlaceAndItsExactBytesRestored() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("st-resolv-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("real-resolv.conf")
        let link = directory.appendingPathComponent("resolv.conf")
        let original = Data("# odd bytes kept as they are\r\nnameserver 192.0.2.53\n\u{0}options ndots:2".utf8)
        try original.write(to: target)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)

        let configurator = LinuxNetworkConfigurator(dnsMethod: .resolvConf(path: link.path), runner: ScriptedCommandRunner())
        try configurator.setDNS(servers: [.v4(IPv4Address(10, 0, 0, 1)), IPAddress("2001:db8::53")!], searchDomains: ["a.example", "b.example"], device: "stun0")
        let written = try String(contentsOf: link, encoding: .utf8)
        #expect(written.contains("nameserver 10.0.0.1\nnameserver 2001:db8::53\nsearch a.example b.example\n"))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path, "the symlink stays a symlink")

        try configurator.undoAll()
        #expect(try Data(contentsOf: target) == original)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
    }

    @Test func aResolvConfThatDidNotExistIsRemovedAgain() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("st-resolv-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("resolv.conf").path
        let configurator = LinuxNetworkConfigurator(dnsMethod: .resolvConf(path: path), runner: ScriptedCommandRunner())
        try configurator.setDNS(servers: [.v4(IPv4Address(10, 0, 0, 1))], device: "stun0")
        #expect(FileManager.default.fileExists(atPath: path))
        try configurator.undoAll()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: directory.path), "a directory we created goes too")
    }

    @Test func searchDomainsThatCouldInjectLinesAreRefused() {
        let configurator = LinuxNetworkConfigurator(dnsMethod: .resolvConf(path: "/nonexistent/resolv.conf"), runner: ScriptedCommandRunner())
        #expect(throws: NetworkConfigurationError.self) {
            try configurator.setDNS(servers: [], searchDomains: ["ok.example\nnameserver 6.6.6.6"], device: "stun0")
        }
    }

    @Test func aMissingProgramSaysWhatToInstall() {
        let runner = SystemCommandRunner(searchPath: ["/nonexistent"])
        let error = #expect(throws: NetworkConfigurationError.self) { _ = try runner.run(["ip", "link"], timeout: .seconds(1)) }
        #expect(error?.description == "ip was not found in /nonexistent (install iproute2)")
    }

    @Test func aHangingCommandIsKilledAtItsTimeout() throws {
        let runner = SystemCommandRunner()
        let started = ContinuousClock.now
        #expect(throws: NetworkConfigurationError.timedOut(command: ["sleep", "30"], seconds: 1)) {
            _ = try runner.run(["sleep", "30"], timeout: .seconds(1))
        }
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}

@Suite("IPv4 range cover for TUN routes")
struct TUNRouteRangeCoverTests {
    private func cover(_ first: String, _ last: String) -> [String] {
        guard let low = IPv4Address(first), let high = IPv4Address(last) else { return ["bad test input"] }
        return IPv4Network.covering(low...high).map(\.description)
    }

    @Test func aPoolWithoutNetworkAndBroadcastAddresses() {
        #expect(cover("10.0.0.2", "10.0.0.254") == [
            "10.0.0.2/31", "10.0.0.4/30", "10.0.0.8/29", "10.0.0.16/28", "10.0.0.32/27", "10.0.0.64/26",
            "10.0.0.128/26", "10.0.0.192/27", "10.0.0.224/28", "10.0.0.240/29", "10.0.0.248/30",
            "10.0.0.252/31", "10.0.0.254/32",
        ])
    }

    @Test func edgeRanges() {
        #expect(cover("192.0.2.7", "192.0.2.7") == ["192.0.2.7/32"])
        #expect(cover("192.0.2.0", "192.0.2.255") == ["192.0.2.0/24"])
        #expect(cover("0.0.0.0", "255.255.255.255") == ["0.0.0.0/0"])
        #expect(cover("255.255.255.255", "255.255.255.255") == ["255.255.255.255/32"])
        #expect(cover("0.0.0.1", "255.255.255.255").count == 32)
        #expect(cover("10.0.0.255", "10.0.1.0") == ["10.0.0.255/32", "10.0.1.0/32"])
    }

    @Test func everyCoverIsExactAndMinimalForRandomRanges() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let a = UInt32.random(in: 0...UInt32.max, using: &generator)
            let b = a &+ UInt32.random(in: 0...70_000, using: &generator)
            let range = IPv4Address(rawValue: min(a, b))...IPv4Address(rawValue: max(a, b))
            let networks = IPv4Network.covering(range)
            // Contiguous, in order, exactly the range.
            var next = UInt64(range.lowerBound.rawValue)
            for network in networks {
                #expect(UInt64(network.address.rawValue) == next)
                next += UInt64(1) << (32 - network.prefixLength)
            }
            #expect(next == UInt64(range.upperBound.rawValue) + 1)
            // Minimal: no two neighbours could merge into one network.
            for (left, right) in zip(networks, networks.dropFirst()) where left.prefixLength == right.prefixLength {
                #expect(IPv4Network(address: left.address, prefixLength: left.prefixLength - 1) == nil)
            }
        }
    }
}
