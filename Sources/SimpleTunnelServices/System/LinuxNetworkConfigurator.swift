import Foundation
import Logging
import NIOConcurrencyHelpers

/// Applies the network settings of an IP-layer tunnel with `ip`, `sysctl`
/// and `resolvectl`, remembering how to undo each one, so that `undoAll()`
/// removes exactly what was added, newest first, even after a failure
/// halfway through.
///
/// With `namespace`, every command targets that network namespace
/// (`ip -n NAME`, `ip netns exec NAME`) while this process stays where it is.
///
/// Every method blocks while its commands run: call them off event loops.
public final class LinuxNetworkConfigurator: @unchecked Sendable {
    // @unchecked: `undoSteps` is guarded by `lock`, held for a whole
    // operation so that the undo order matches the order things were applied.

    public enum DNSMethod: Sendable, Hashable {
        /// systemd-resolved when it runs (and no namespace is set), else resolv.conf.
        case automatic
        /// `resolvectl dns` / `resolvectl domain` on the tunnel's interface.
        case resolved
        /// Rewrites this file in place and restores its exact bytes on undo.
        case resolvConf(path: String)
    }

    public let namespace: String?
    private let dnsMethod: DNSMethod
    private let runner: CommandRunning
    private let logger: Logger
    private let lock = NIOLock()
    private var undoSteps: [UndoStep] = [] {
        didSet { writeJournal() }
    }
    /// Where the undo steps are kept for after a crash (`NetworkUndoJournal`), and under which part.
    private let journal: (NetworkUndoJournal, NetworkUndoJournal.Section)?

    public init(
        namespace: String? = nil, dnsMethod: DNSMethod = .automatic, runner: CommandRunning = SystemCommandRunner(),
        journal: (NetworkUndoJournal, NetworkUndoJournal.Section)? = nil, logger: Logger = Logger(label: "simpletunnel.network")
    ) {
        self.namespace = namespace
        self.dnsMethod = dnsMethod
        self.runner = runner
        self.journal = journal
        self.logger = logger
    }

    /// Called with the lock held, whenever the steps change.
    private func writeJournal() {
        guard let (journal, section) = journal else { return }
        do throws(NetworkConfigurationError) {
            try journal.record(section, steps: undoSteps)
        } catch {
            // The settings themselves are in place; only a crash's cleanup would miss them.
            logger.warning("cannot keep the undo journal; after a crash, these settings would need removing by hand", metadata: ["reason": "\(error)"])
        }
    }

    /// Undo actions waiting for `undoAll()`, newest last, as commands one could run by hand.
    public var pendingUndo: [String] {
        lock.withLock { undoSteps.map(\.description) }
    }

    // MARK: Link, addresses, routes

    /// Sets the MTU and brings the link up; undo restores the previous MTU
    /// and, if the link was down before, takes it down again.
    public func setLinkUp(device: String, mtu: Int) throws(NetworkConfigurationError) {
        try locked { () throws(NetworkConfigurationError) in
            let show = ip(["-j", "link", "show", "dev", device])
            let before = try IPRouteOutput.first(IPRouteOutput.Link.self, from: runner.runChecked(show), command: show)
            try apply(ip(["link", "set", "dev", device, "mtu", String(mtu), "up"]),
                      undo: ip(["link", "set", "dev", device, "mtu", String(before.mtu)] + (before.isUp ? [] : ["down"])))
        }
    }

    /// Adds `address/prefixLength` to `device`.
    public func addAddress(_ address: IPv4Address, prefixLength: Int, device: String) throws(NetworkConfigurationError) {
        let target = try Self.addressTarget(address, prefixLength: prefixLength, device: device)
        try locked { () throws(NetworkConfigurationError) in
            try apply(ip(["address", "add"] + target), undo: ip(["address", "del"] + target))
        }
    }

    /// Moves `device` from the address added by `addAddress` to another one,
    /// never leaving it without an address: the kernel deletes every route
    /// through a device that loses its last IPv4 address, and a full tunnel's
    /// routes must not lapse, or traffic leaks around the tunnel meanwhile.
    /// An address in the old one's subnet would be its secondary, which the
    /// kernel deletes with it, so a /32 of the new address bridges the change.
    public func replaceAddress(
        _ old: IPv4Address, prefixLength oldPrefix: Int, with new: IPv4Address, prefixLength newPrefix: Int, device: String
    ) throws(NetworkConfigurationError) {
        let oldTarget = try Self.addressTarget(old, prefixLength: oldPrefix, device: device)
        let newTarget = try Self.addressTarget(new, prefixLength: newPrefix, device: device)
        guard oldTarget != newTarget else { return }
        let wouldBeSecondary = oldPrefix == newPrefix && old.rawValue & IPv4Network.maskBits(oldPrefix) == new.rawValue & IPv4Network.maskBits(oldPrefix)
        try locked { () throws(NetworkConfigurationError) in
            if wouldBeSecondary {
                let bridge = try Self.addressTarget(new, prefixLength: 32, device: device)
                try apply(ip(["address", "add"] + bridge), undo: ip(["address", "del"] + bridge))
                try undoNow(ip(["address", "del"] + oldTarget))
                try apply(ip(["address", "add"] + newTarget), undo: ip(["address", "del"] + newTarget))
                try undoNow(ip(["address", "del"] + bridge))
            } else {
                try apply(ip(["address", "add"] + newTarget), undo: ip(["address", "del"] + newTarget))
                try undoNow(ip(["address", "del"] + oldTarget))
            }
        }
    }

    /// Adds a route to `destination` through `gateway` and/or out of `device`.
    public func addRoute(_ destination: IPv4Network, via gateway: IPv4Address? = nil, device: String? = nil) throws(NetworkConfigurationError) {
        let target = try Self.routeTarget(destination, via: gateway, device: device)
        try locked { () throws(NetworkConfigurationError) in
            try apply(ip(["route", "add"] + target), undo: ip(["route", "del"] + target))
        }
    }

    /// How packets to `host` leave now (`ip route get`). Changes nothing.
    public func route(to host: IPv4Address) throws(NetworkConfigurationError) -> IPv4RouteLookup {
        let command = ip(["-j", "route", "get", host.description])
        let route = try IPRouteOutput.first(IPRouteOutput.Route.self, from: runner.runChecked(command), command: command)
        guard let device = route.dev else {
            throw .unexpectedOutput(command: command, output: "no device in the route")
        }
        return IPv4RouteLookup(
            destination: host,
            gateway: route.gateway.flatMap { IPv4Address($0) },
            device: device,
            preferredSource: route.prefsrc.flatMap { IPv4Address($0) },
            isLocal: route.type == "local"
        )
    }

    /// Keeps the tunnel server reachable outside the tunnel: adds `host/32`
    /// along the route it uses now. Returns that route, or nil when the host
    /// is this machine (nothing to pin).
    @discardableResult
    public func pinHostRoute(to host: IPv4Address) throws(NetworkConfigurationError) -> IPv4RouteLookup? {
        let current = try route(to: host)
        guard !current.isLocal else { return nil }
        try addRoute(IPv4Network(host: host), via: current.gateway, device: current.device)
        return current
    }

    /// For a full IPv4-only tunnel: two IPv6 blackhole routes (`::/1` and
    /// `8000::/1`) that beat any default route, so IPv6 cannot bypass the tunnel.
    public func blackholeIPv6() throws(NetworkConfigurationError) {
        try locked { () throws(NetworkConfigurationError) in
            for prefix in ["::/1", "8000::/1"] {
                try apply(ip(["-6", "route", "add", "blackhole", prefix]), undo: ip(["-6", "route", "del", "blackhole", prefix]))
            }
        }
    }

    // MARK: Firewall

    /// Loads `script`, an nft script that defines the table `family name`,
    /// as one transaction; undo deletes the table.
    public func loadFirewallTable(family: String, name: String, script: String) throws(NetworkConfigurationError) {
        try locked { () throws(NetworkConfigurationError) in
            try apply(inNamespace(["nft", script]), undo: inNamespace(["nft", "delete", "table", family, name]))
        }
    }

    // MARK: IPv6

    /// Adds `address/prefixLength` to `device`, usable at once: duplicate
    /// address detection is skipped (`nodad`), as the tunnel's link has no other host.
    public func addAddress(_ address: IPv6Address, prefixLength: Int, device: String) throws(NetworkConfigurationError) {
        guard (0...128).contains(prefixLength) else {
            throw .invalidSetting("prefix length \(prefixLength) is not from 0 to 128")
        }
        let target = ["\(address)/\(prefixLength)", "dev", device]
        try locked { () throws(NetworkConfigurationError) in
            try apply(ip(["-6", "address", "add"] + target + ["nodad"]), undo: ip(["-6", "address", "del"] + target))
        }
    }

    /// Adds an IPv6 route to `destination` through `gateway` and/or out of `device`.
    public func addRoute(_ destination: IPv6Network, via gateway: IPv6Address? = nil, device: String? = nil) throws(NetworkConfigurationError) {
        guard gateway != nil || device != nil else {
            throw .invalidSetting("a route to \(destination) needs a gateway or a device")
        }
        let target = [destination.description] + (gateway.map { ["via", $0.description] } ?? []) + (device.map { ["dev", $0] } ?? [])
        try locked { () throws(NetworkConfigurationError) in
            try apply(ip(["-6", "route", "add"] + target), undo: ip(["-6", "route", "del"] + target))
        }
    }

    /// As `pinHostRoute(to:)` for an IPv6 tunnel server: adds `host/128` along
    /// the route it uses now; false when the host is this machine (nothing to pin).
    @discardableResult
    public func pinHostRoute(to host: IPv6Address) throws(NetworkConfigurationError) -> Bool {
        let command = ip(["-6", "-j", "route", "get", host.description])
        let route = try IPRouteOutput.first(IPRouteOutput.Route.self, from: runner.runChecked(command), command: command)
        guard route.type != "local" else { return false }
        guard let device = route.dev else {
            throw .unexpectedOutput(command: command, output: "no device in the route")
        }
        try addRoute(IPv6Network(host: host), via: route.gateway.flatMap { IPv6Address($0) }, device: device)
        return true
    }

    /// For a full IPv6-only tunnel: two IPv4 blackhole routes (`0.0.0.0/1` and
    /// `128.0.0.0/1`) that beat any default route, so IPv4 cannot bypass the tunnel.
    /// The route to an IPv4 tunnel server itself stays (see `pinHostRoute(to:)`).
    public func blackholeIPv4() throws(NetworkConfigurationError) {
        try locked { () throws(NetworkConfigurationError) in
            for prefix in ["0.0.0.0/1", "128.0.0.0/1"] {
                try apply(ip(["route", "add", "blackhole", prefix]), undo: ip(["route", "del", "blackhole", prefix]))
            }
        }
    }

    /// Sets `net.ipv4.ip_forward`; undo puts back the previous value. Does
    /// nothing (and records nothing) when the value is already `enabled`.
    func setIPv4Forwarding(_ enabled: Bool) throws(NetworkConfigurationError) {
        try locked { () throws(NetworkConfigurationError) in
            let key = "net.ipv4.ip_forward"
            let current = try runner.runChecked(inNamespace(["sysctl", "-n", key])).standardOutput
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let wanted = enabled ? "1" : "0"
            guard current != wanted else { return }
            try apply(inNamespace(["sysctl", "-w", "\(key)=\(wanted)"]), undo: inNamespace(["sysctl", "-w", "\(key)=\(current)"]))
        }
    }

    // MARK: DNS

    /// Points name resolution at `servers` (and `searchDomains`) for the
    /// tunnel on `device`, per the configured `DNSMethod`.
    /// Every name to `servers` (a full tunnel's DNS).
    @discardableResult
    public func setDNS(servers: [IPAddress], searchDomains: [String] = [], device: String) throws(NetworkConfigurationError) -> DNSApplied {
        try setDNS(DNSPlan(servers: servers, searchDomains: searchDomains, carriesEverything: true), device: device)
    }

    /// With systemd-resolved: the link's servers and domains, and whether it
    /// is the default route for names no other link claims. With a plain
    /// resolv.conf: the whole file for a full tunnel; a split one leaves it
    /// alone (a file cannot send some names to some servers) and says why.
    @discardableResult
    public func setDNS(_ plan: DNSPlan, device: String) throws(NetworkConfigurationError) -> DNSApplied {
        let domains = plan.searchDomains + plan.routingDomains
        if let bad = domains.first(where: { $0.isEmpty || $0.contains(where: { $0.isWhitespace || $0.isNewline || $0 == "#" || $0 == "~" }) }) {
            throw .invalidSetting("search domain \"\(bad)\" is empty or contains spaces, a # or a ~")
        }
        return try locked { () throws(NetworkConfigurationError) -> DNSApplied in
            switch try chooseDNSMethod() {
            case .resolved:
                try apply(["resolvectl", "dns", device] + plan.servers.map(\.description), undo: ["resolvectl", "revert", device])
                // No extra undo: `revert` above also drops the domains and the default route.
                if !plan.resolvedDomains.isEmpty {
                    _ = try runner.runChecked(["resolvectl", "domain", device] + plan.resolvedDomains)
                }
                _ = try runner.runChecked(["resolvectl", "default-route", device, plan.carriesEverything ? "yes" : "no"])
                return .resolved
            case .file(let path):
                guard plan.carriesEverything else { return .leftAlone(plan.splitAdvice) }
                let text = Self.resolvConfText(servers: plan.servers, searchDomains: plan.searchDomains, device: device)
                let backup = try ResolvConfFile(path: path).replace(with: text)
                undoSteps.append(.restoreFile(backup))
                return .resolvConf(path: path)
            }
        }
    }

    private enum ChosenDNSMethod {
        case resolved
        case file(String)
    }

    private func chooseDNSMethod() throws(NetworkConfigurationError) -> ChosenDNSMethod {
        let defaultPath = namespace.map { "/etc/netns/\($0)/resolv.conf" } ?? "/etc/resolv.conf"
        switch dnsMethod {
        case .resolved: return .resolved
        case .resolvConf(let path): return .file(path)
        case .automatic:
            // resolved serves the root namespace only; `ip netns exec` reads /etc/netns/NAME/resolv.conf.
            guard namespace == nil, (try? runner.run(["resolvectl", "status"], timeout: .seconds(5)))?.status == 0 else {
                return .file(defaultPath)
            }
            return .resolved
        }
    }

    static func resolvConfText(servers: [IPAddress], searchDomains: [String], device: String) -> String {
        var lines = ["# Written by SimpleTunnel for \(device); the previous file comes back when the tunnel closes."]
        lines += servers.map { "nameserver \($0)" }
        if !searchDomains.isEmpty { lines.append("search " + searchDomains.joined(separator: " ")) }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Undo

    /// Undoes everything applied so far, newest first. Keeps going past
    /// failures and reports them together; settings that vanished with their
    /// interface (its addresses and routes) count as undone.
    public func undoAll() throws(NetworkConfigurationError) {
        let failures: [NetworkConfigurationError] = lock.withLock {
            var failures: [NetworkConfigurationError] = []
            var failed: [UndoStep] = []
            for step in undoSteps.reversed() {
                do throws(NetworkConfigurationError) {
                    try step.perform(with: runner)
                } catch {
                    failures.append(error)
                    failed.insert(step, at: 0)
                }
            }
            // Forgotten here; the journal keeps the failed ones for `tunnel-client cleanup`.
            undoSteps = []
            if !failed.isEmpty, let (journal, section) = journal { try? journal.record(section, steps: failed) }
            return failures
        }
        guard failures.isEmpty else { throw .undoIncomplete(failures) }
    }

    // MARK: Plumbing

    private func locked<Result>(_ body: () throws(NetworkConfigurationError) -> Result) throws(NetworkConfigurationError) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Runs `command`; only if it succeeds, remembers `undo`. Call with the lock held.
    private func apply(_ command: [String], undo: [String]) throws(NetworkConfigurationError) {
        _ = try runner.runChecked(command)
        logger.debug("network setting applied", metadata: ["command": "\(NetworkConfigurationError.shellText(command))"])
        undoSteps.append(.command(undo))
    }

    /// Performs the recorded undo step `command` now and forgets it. Call with the lock held.
    private func undoNow(_ command: [String]) throws(NetworkConfigurationError) {
        guard let index = undoSteps.lastIndex(where: { if case .command(command) = $0 { true } else { false } }) else {
            throw .invalidSetting("nothing recorded to undo with `\(NetworkConfigurationError.shellText(command))`")
        }
        try undoSteps[index].perform(with: runner)
        undoSteps.remove(at: index)
        logger.debug("network setting undone", metadata: ["command": "\(NetworkConfigurationError.shellText(command))"])
    }

    private func ip(_ arguments: [String]) -> [String] {
        ["ip"] + (namespace.map { ["-n", $0] } ?? []) + arguments
    }

    private func inNamespace(_ command: [String]) -> [String] {
        (namespace.map { ["ip", "netns", "exec", $0] } ?? []) + command
    }

    /// `ADDRESS/PREFIX dev DEVICE`, as `ip address add` and `del` take it.
    private static func addressTarget(_ address: IPv4Address, prefixLength: Int, device: String) throws(NetworkConfigurationError) -> [String] {
        guard (0...32).contains(prefixLength) else {
            throw .invalidSetting("prefix length \(prefixLength) is not from 0 to 32")
        }
        return ["\(address)/\(prefixLength)", "dev", device]
    }

    private static func routeTarget(_ destination: IPv4Network, via gateway: IPv4Address?, device: String?) throws(NetworkConfigurationError) -> [String] {
        guard gateway != nil || device != nil else {
            throw .invalidSetting("a route to \(destination) needs a gateway or a device")
        }
        return [destination.description] + (gateway.map { ["via", $0.description] } ?? []) + (device.map { ["dev", $0] } ?? [])
    }
}
