import Foundation
import Testing
@testable import SimpleTunnelServices

/// A server whose resolv.conf points at a stub resolver on its own loopback
/// (systemd-resolved's 127.0.0.53) has no DNS servers to give clients: it says
/// so at start, and how to name them.
@Suite("Server launch: the DNS hint")
struct DNSHintTests {
    func prepare(resolvConf: String?, configuration: String? = nil) throws -> TunnelServerLaunch {
        var options = TunnelServerLaunchOptions.none
        options.stateDirectory = NSTemporaryDirectory() + "dns-hint-\(UUID().uuidString)"
        let folder = try TemporaryDirectory()
        if let configuration {
            options.configurationPath = try folder.write("server.plist", text: configuration)
        }
        return try TunnelServerLaunch.prepare(options, resolvConf: resolvConf)
    }

    static let systemdResolved = """
        # This is /run/systemd/resolve/stub-resolv.conf managed by man:systemd-resolved(8).
        nameserver 127.0.0.53
        options edns0 trust-ad
        search .
        """

    @Test func aLoopbackResolverAndNoDNSInTheConfigurationGiveTheHint() throws {
        let launch = try prepare(resolvConf: Self.systemdResolved)
        #expect(launch.settings.clientConfiguration["DNS"] == nil, "no DNS is pushed")
        let hint = try #require(launch.warnings.first { $0.contains("no DNS servers") })
        #expect(hint.contains("127.0.0.53") && hint.contains("/etc/resolv.conf"), "\(hint)")
        #expect(hint.contains("<key>DNS</key>") && hint.contains("<key>Servers</key>"), "\(hint)")
    }

    @Test func noHintWhenClientsGetServersOrTheFileDecides() throws {
        // A usable server beside the stub: clients get it.
        let mixed = try prepare(resolvConf: "nameserver 127.0.0.53\nnameserver 192.0.2.53\n")
        #expect(!mixed.warnings.contains { $0.contains("no DNS servers") })
        // The configuration names its servers, or deliberately none.
        for servers in ["<string>192.0.2.53</string>", ""] {
            let configured = try prepare(
                resolvConf: Self.systemdResolved,
                configuration: "<plist version=\"1.0\"><dict><key>DNS</key><dict><key>Servers</key><array>\(servers)</array></dict></dict></plist>")
            #expect(!configured.warnings.contains { $0.contains("no DNS servers") }, "\(servers)")
        }
        // Unreadable resolv.conf, or one naming no loopback resolver: nothing to explain.
        #expect(try prepare(resolvConf: nil).warnings.isEmpty)
        #expect(try prepare(resolvConf: "search example.com\n").warnings.isEmpty)
    }

    @Test func loopbackNameserversAreFoundPastCommentsAndOfEitherFamily() {
        let text = "#nameserver 127.0.0.2\nnameserver 127.0.0.53 # stub\nnameserver ::1\nnameserver 192.0.2.1\nnameserver\n"
        #expect(ResolverConfiguration.loopbackNameservers(inResolvConf: text).map(\.description) == ["127.0.0.53", "::1"])
    }
}
