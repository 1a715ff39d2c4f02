import Foundation
import NIOConcurrencyHelpers
@testable import SimpleTunnelServices

/// Network namespaces, veth pairs and processes inside them, for tests that
/// need real interfaces without touching the machine's own network: every
/// interface, address and route lives in a namespace the lab created, and
/// `cleanup()` (call it from a `defer`) kills the processes and deletes the
/// namespaces, also when the test failed.
final class NetworkNamespaceLab: @unchecked Sendable {
    // @unchecked: the lists are guarded by `lock`.
    let runner = SystemCommandRunner()
    private let lock = NIOLock()
    private var namespaces: [String] = []
    private var processes: [ExternalProcess] = []

    // MARK: Whether the lab can run here

    /// Why namespace tests cannot run here, or nil when they can. Probed once.
    static let unavailableReason: String? = probe()

    /// For `@Test(.enabled(if: NetworkNamespaceLab.isAvailable, ...))`.
    static var isAvailable: Bool {
        guard let reason = unavailableReason else { return true }
        guard TestRequirements.met(false, "network namespaces (\(reason))") else {
            FileHandle.standardError.write(Data("Skipping network namespace test: \(reason)\n".utf8))
            return false
        }
        return true
    }

    static var isPythonAvailable: Bool { isAvailable && TestRequirements.met(ExternalProcess.isPythonAvailable, "python3") }

    private static func probe() -> String? {
        guard geteuid() == 0 else { return "not running as root" }
        guard access("/dev/net/tun", R_OK | W_OK) == 0 else { return "/dev/net/tun is missing or not accessible (modprobe tun)" }
        let runner = SystemCommandRunner()
        guard runner.locate("ip") != nil else { return "the ip command (iproute2) is not installed" }
        let name = uniqueName()
        guard let added = try? runner.run(["ip", "netns", "add", name], timeout: .seconds(10)), added.status == 0 else {
            return "`ip netns add` does not work here (no CAP_SYS_ADMIN, or /var/run/netns is not writable)"
        }
        _ = try? runner.run(["ip", "netns", "delete", name], timeout: .seconds(10))
        return nil
    }

    private static func uniqueName() -> String {
        "st-" + UUID().uuidString.prefix(8).lowercased()
    }

    deinit {
        cleanup()
    }

    // MARK: Building

    /// A new namespace with its loopback up.
    func makeNamespace() throws -> String {
        let name = Self.uniqueName()
        _ = try runner.runChecked(["ip", "netns", "add", name])
        lock.withLock { namespaces.append(name) }
        _ = try runner.runChecked(["ip", "-n", name, "link", "set", "lo", "up"])
        return name
    }

    /// A veth pair created directly inside the two namespaces (never in the
    /// root one), addressed and up. Names only need to be unique per namespace.
    func addVethPair(_ first: (namespace: String, device: String, address: String),
                     _ second: (namespace: String, device: String, address: String)) throws {
        // The kernel may hold these behind the clean-up of namespaces other tests just deleted: give them time.
        let patience = Duration.seconds(60)
        _ = try runner.runChecked(["ip", "-n", first.namespace, "link", "add", first.device, "type", "veth",
                                   "peer", "name", second.device, "netns", second.namespace], timeout: patience)
        for end in [first, second] {
            _ = try runner.runChecked(["ip", "-n", end.namespace, "address", "add", end.address, "dev", end.device], timeout: patience)
            _ = try runner.runChecked(["ip", "-n", end.namespace, "link", "set", end.device, "up"], timeout: patience)
        }
    }

    func enableForwarding(in namespace: String) throws {
        _ = try run(in: namespace, ["sysctl", "-w", "net.ipv4.ip_forward=1"])
    }

    // MARK: Running things inside

    /// Runs a command inside `namespace` to completion (killed after `timeout`).
    @discardableResult
    func run(in namespace: String, _ command: [String], timeout: Duration = .seconds(20), check: Bool = true) throws -> CommandResult {
        let full = ["ip", "netns", "exec", namespace] + command
        return check ? try runner.runChecked(full, timeout: timeout) : try runner.run(full, timeout: timeout)
    }

    /// Starts a long-running command inside `namespace`; `cleanup()` SIGKILLs it.
    func start(in namespace: String, _ command: [String]) throws -> ExternalProcess {
        guard let ip = runner.locate("ip") else { throw NetworkConfigurationError.programNotFound("ip", searched: runner.searchPath) }
        let process = try ExternalProcess([ip, "netns", "exec", namespace] + command)
        lock.withLock { processes.append(process) }
        return process
    }

    /// What `ip netns exec NAME` shows as /etc/resolv.conf.
    func writeResolvConf(for namespace: String, _ contents: String) throws {
        let directory = "/etc/netns/\(namespace)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: URL(fileURLWithPath: "\(directory)/resolv.conf"))
    }

    func removeResolvConf(for namespace: String) {
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(namespace)")
    }

    // MARK: Tearing down

    /// Kills the processes, deletes the namespaces (and with them every
    /// interface, address and route inside) and their /etc/netns files. Idempotent.
    func cleanup() {
        let (processes, namespaces) = lock.withLock {
            defer {
                self.processes.removeAll()
                self.namespaces.removeAll()
            }
            return (self.processes, self.namespaces)
        }
        for process in processes { process.terminate() }
        for namespace in namespaces.reversed() {
            _ = try? runner.run(["ip", "netns", "delete", namespace], timeout: .seconds(10))
            removeResolvConf(for: namespace)
        }
    }
}
