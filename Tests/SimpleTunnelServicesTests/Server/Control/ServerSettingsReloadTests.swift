import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// What a reload applies and what it keeps, decided from two launches made by the same merge.
@Suite("Reloading the server's settings", .timeLimit(.minutes(3)))
struct ServerSettingsReloadTests {
    let folder = NSTemporaryDirectory() + "settings-reload-\(UUID().uuidString.prefix(8))"

    func launch(_ configuration: String, allow: [String] = []) throws -> TunnelServerLaunch {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/server.plist"
        try Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>\(configuration)</dict></plist>
            """.utf8
        ).write(to: URL(fileURLWithPath: path))
        var options = TunnelServerLaunchOptions.none
        options.stateDirectory = folder
        options.configurationPath = path
        options.allow = allow
        return try TunnelServerLaunch.prepare(options, resolvConf: nil)
    }

    static let base = """
        <key>IPv4</key><dict>
          <key>Pool</key><dict><key>StartAddress</key><string>10.9.0.2</string><key>EndAddress</key><string>10.9.0.20</string></dict>
          <key>Routes</key><array><dict><key>Address</key><string>10.1.0.0</string><key>Netmask</key><string>255.255.0.0</string></dict></array>
        </dict>
        <key>DNS</key><dict><key>Servers</key><array><string>10.9.0.1</string></array></dict>
        """

    @Test func theSameFilesChangeNothing() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let running = try launch(Self.base)
        let reload = ServerSettingsReload(running: running, serving: running.settings, reread: try launch(Self.base))
        #expect(reload.applied.isEmpty)
        #expect(reload.needsRestart.isEmpty)
    }

    @Test func routesDNSPolicyAndLimitsApplyWhileThePoolWaitsForARestart() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let running = try launch(Self.base, allow: ["*"])
        let changed = """
            <key>IPv4</key><dict>
              <key>Pool</key><dict><key>StartAddress</key><string>10.9.0.2</string><key>EndAddress</key><string>10.9.0.99</string></dict>
              <key>Routes</key><array><dict><key>Address</key><string>10.2.0.0</string><key>Netmask</key><string>255.255.0.0</string></dict></array>
            </dict>
            <key>DNS</key><dict><key>Servers</key><array><string>10.9.0.53</string></array></dict>
            <key>Server</key><dict>
              <key>Limits</key><dict><key>FlowsPerTunnel</key><integer>77</integer><key>ConnectTimeout</key><real>2.5</real></dict>
              <key>Policy</key><dict><key>Deny</key><array><string>10.3.0.0/16</string></array></dict>
            </dict>
            """
        let reread = try launch(changed, allow: ["*"])
        let reload = ServerSettingsReload(running: running, serving: running.settings, reread: reread)
        let applied = reload.applied.joined(separator: "\n")
        #expect(applied.contains("pushed configuration: routes 10.1.0.0/16, DNS 10.9.0.1 → routes 10.2.0.0/16, DNS 10.9.0.53"), "\(applied)")
        #expect(applied.contains("destination policy: allow [*] deny [] → allow [*] deny [10.3.0.0/16]"), "\(applied)")
        #expect(reload.applied.contains("flows per tunnel: 4096 → 77"), "\(applied)")
        #expect(reload.applied.contains("connect timeout: 10 s → 2.5 s"), "\(applied)")
        #expect(reload.needsRestart == ["IPv4 pool: 10.9.0.2-10.9.0.20 → 10.9.0.2-10.9.0.99"])

        // Applied: the new values, except the pool, which stays the running one's.
        #expect(reload.settings.multiplexerLimits.maximumFlows == 77)
        #expect(reload.settings.opener.connectTimeout == .milliseconds(2500))
        #expect(reload.configuration.routes == [try IPv4Network(parsing: "10.2.0.0/16")])
        #expect(reload.configuration.pool == running.configuration.pool)
        #expect(reload.settings.opener.authorizer.refusal(forHost: "10.3.0.9", port: 80) != nil)
        #expect(reload.settings.bufferBudget === running.settings.bufferBudget, "the server-wide budget is the one tunnels already hold")

        // Until a restart, the next reload of the same files still names the pool, and nothing else.
        let next = ServerSettingsReload(running: reload.effective(running: running, reread: reread), serving: reload.settings, reread: try launch(changed, allow: ["*"]))
        #expect(next.applied.isEmpty, "\(next.applied)")
        #expect(next.needsRestart == ["IPv4 pool: 10.9.0.2-10.9.0.20 → 10.9.0.2-10.9.0.99"])
    }

    /// Each setting that waits for a restart is kept by its own declaration:
    /// after the reload, every one it named describes as the running server's.
    @Test func whatWaitsForARestartKeepsTheRunningValue() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let running = try launch(Self.base)
        let changed = Self.base.replacingOccurrences(of: "10.9.0.20", with: "10.9.0.30") + """
            <key>Server</key><dict>
              <key>ListenAddress</key><string>127.0.0.2</string><key>Port</key><integer>4555</integer>
              <key>ClientIsolation</key><false/>
            </dict>
            """
        let reread = try launch(changed)
        let reload = ServerSettingsReload(running: running, serving: running.settings, reread: reread)
        let named = reload.needsRestart.map { String($0.prefix { $0 != ":" }) }
        #expect(Set(named).isSuperset(of: ["listen address", "listen port", "IPv4 pool"]), "\(reload.needsRestart)")
        let effective = reload.effective(running: running, reread: reread)
        for name in named {
            let aspect = try #require(ServerSettingsReload.aspects.first { $0.name == name })
            #expect(aspect.describe(effective) == aspect.describe(running), "\(name) was not kept")
        }
        #expect(reload.settings.host == running.settings.host && reload.settings.port == running.settings.port)
    }

    @Test func everyAspectIsNamedOnceAndTheListenerNeverChangesLive() {
        let names = ServerSettingsReload.aspects.map(\.name)
        #expect(Set(names).count == names.count)
        for name in ["listen address", "listen port", "TLS", "database", "IPv4 pool", "IPv6 pool"] {
            #expect(ServerSettingsReload.aspects.first { $0.name == name }?.isLive == false, "\(name)")
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func aRenewedCertificateServesTheNextTunnelAndTheOpenOneCarriesOn() async throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let old = try SelfSignedIdentity.loadOrCreate(directory: folder + "/old")
        let renewed = try SelfSignedIdentity.loadOrCreate(directory: folder + "/renewed")
        let live = folder + "/live"
        try FileManager.default.createDirectory(atPath: live, withIntermediateDirectories: true)
        func install(_ identity: SelfSignedIdentity) throws {
            for (from, to) in [(identity.certificatePath, "/cert.pem"), (identity.privateKeyPath, "/key.pem")] {
                try? FileManager.default.removeItem(atPath: live + to)
                try FileManager.default.copyItem(atPath: from, toPath: live + to)
            }
        }
        try install(old)
        var options = TunnelServerLaunchOptions.none
        options.port = 0
        options.stateDirectory = folder
        options.certificatePath = live + "/cert.pem"
        options.privateKeyPath = live + "/key.pem"
        let running = try TunnelServerLaunch.prepare(options, resolvConf: nil)
        let group = MultiThreadedEventLoopGroup.singleton
        let server = try await TunnelServer.start(settings: running.settings, group: group, logger: TunnelFixture.logger)
        let port = try #require(server.localAddress.port)
        func connect(pinning identity: SelfSignedIdentity) async throws -> TunnelClientConnection {
            let settings = TunnelClientConnection.Settings(
                host: "127.0.0.1", port: port, tls: try TLSContext(configuration: .client(trust: .pinnedSHA256([identity.sha256Fingerprint]))))
            return try await TunnelClientConnection.connect(settings: settings, group: group, logger: TunnelFixture.logger)
        }
        let first = try await connect(pinning: old)

        try install(renewed)
        server.apply(ServerSettingsReload(running: running, serving: running.settings, reread: try TunnelServerLaunch.prepare(options, resolvConf: nil)))
        let second = try await connect(pinning: renewed)
        await #expect(throws: TLSError.self) { _ = try await connect(pinning: old) }
        #expect(first.channel.isActive, "the tunnel opened with the old certificate carries on")
        await first.close()
        await second.close()
        await server.shutdown()
    }
}
