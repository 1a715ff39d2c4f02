import NIOCore
import Foundation
import Testing
@testable import SimpleTunnelServices

@Suite("Server-only settings")
struct TunnelServerSettingsTests {
    @Test func defaultsWhenTheFileSaysNothing() throws {
        let settings = try TunnelServerConfiguration(propertyList: SampleConfiguration.with()).server
        #expect(settings.listenAddress == nil)
        #expect(settings.port == nil)
        #expect(settings.certificatePath == nil)
        #expect(settings.limits.values.isEmpty, "a key left out is absent, so the flag or the runtime's default applies")
        let folder = try TemporaryDirectory()
        var options = TunnelServerLaunchOptions.none
        options.stateDirectory = folder.path
        let defaults = try TunnelServerLaunch.prepare(options, resolvConf: nil).settings
        #expect(defaults.multiplexerLimits.maximumFlows == 4096)
        #expect(defaults.maximumTunnels == 256)
        #expect(defaults.firstMessageTimeout == .seconds(10))
        #expect(defaults.opener.connectTimeout == .seconds(10))
        #expect(defaults.multiplexerLimits.udpIdleTimeout == .seconds(60))
        #expect(defaults.multiplexerLimits.maximumUDPFlows == 256)
        #expect(defaults.opener.drainTimeout == .seconds(30))
        #expect(defaults.multiplexerLimits.tunnelBufferBudget == 8 << 20 && defaults.multiplexerLimits.tunnelEarlyDataBudget == 4 << 20)
        #expect(settings.policy == .allowAll)
    }

    @Test func readsEverySetting() throws {
        let settings = try TunnelServerConfiguration(propertyList: SampleConfiguration.withServer([
            "ListenAddress": .string("::"),
            "Port": 0,
            "Certificate": .string("/etc/tunnel/server.pem"),
            "PrivateKey": .string("/etc/tunnel/server.key"),
            "ClientCA": .string("/etc/tunnel/clients.pem"),
            "Limits": .dictionary([
                "FlowsPerTunnel": 100, "Tunnels": 3, "FirstMessageTimeout": .real(0.25),
                "ConnectTimeout": 5, "UDPIdleTimeout": 120, "UDPFlowsPerTunnel": 7, "FlowSockets": 900, "FlowDrainTimeout": .real(2.5),
                "TunnelBufferMiB": 2, "EarlyDataMiB": 1, "ServerBufferMiB": 64,
            ]),
            "Policy": .dictionary(["Allow": .strings(["*.example.com:443"]), "Deny": .strings(["10.0.0.0/8"])]),
        ])).server
        #expect(settings.listenAddress == "::")
        #expect(settings.port == 0)
        #expect(settings.certificatePath == "/etc/tunnel/server.pem")
        #expect(settings.privateKeyPath == "/etc/tunnel/server.key")
        #expect(settings.clientCAPath == "/etc/tunnel/clients.pem")
        let expected: TunnelServerSettings.Limits = [
            "FlowsPerTunnel": .count(100), "Tunnels": .count(3), "FirstMessageTimeout": .seconds(.milliseconds(250)),
            "ConnectTimeout": .seconds(.seconds(5)), "UDPIdleTimeout": .seconds(.seconds(120)), "UDPFlowsPerTunnel": .count(7),
            "FlowSockets": .count(900), "FlowDrainTimeout": .seconds(.milliseconds(2500)),
            "TunnelBufferMiB": .count(2), "EarlyDataMiB": .count(1), "ServerBufferMiB": .count(64),
        ]
        #expect(settings.limits == expected)
        #expect(settings.policy == (try DestinationPolicy(allow: ["*.example.com:443"], deny: ["10.0.0.0/8"])))
    }

    @Test func aPartialLimitsDictionaryKeepsTheOtherDefaults() throws {
        let limits = try TunnelServerConfiguration(propertyList: SampleConfiguration.withServer([
            "Limits": .dictionary(["Tunnels": 2]),
        ])).server.limits
        #expect(limits == ["Tunnels": .count(2)])
    }

    @Test func relativeFilePathsAreRelativeToTheConfigurationFile() throws {
        let folder = try TemporaryDirectory()
        let path = try folder.write("server.plist", binary: SampleConfiguration.withServer([
            "Certificate": .string("tls/server.pem"),
            "PrivateKey": .string("/absolute/server.key"),
        ]))
        let settings = try TunnelServerConfiguration.load(contentsOf: path, resolvConf: nil).server
        #expect(settings.certificatePath == folder.path + "/tls/server.pem")
        #expect(settings.privateKeyPath == "/absolute/server.key")
    }

    @Test func withoutAFileRelativePathsStayAsWritten() throws {
        let settings = try TunnelServerConfiguration(propertyList: SampleConfiguration.withServer([
            "ClientCA": .string("clients.pem"),
        ])).server
        #expect(settings.clientCAPath == "clients.pem")
    }

    @Test func theCommandLineWinsOverTheFileWhichWinsOverTheDefaults() throws {
        let folder = NSTemporaryDirectory() + "settings-precedence-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/server.plist"
        var buffer = ByteBuffer()
        BinaryPropertyListWriter.write(
            SampleConfiguration.withServer(["Port": 8890, "Limits": .dictionary(["Tunnels": 20, "FlowsPerTunnel": 33, "ConnectTimeout": 4])]),
            into: &buffer)
        try Data(buffer.readableBytesView).write(to: URL(fileURLWithPath: path))
        var options = TunnelServerLaunchOptions.none
        options.configurationPath = path
        options.stateDirectory = folder
        options.port = 443
        options.maximumTunnels = 10
        let launch = try TunnelServerLaunch.prepare(options, resolvConf: nil)
        #expect(launch.settings.port == 443, "the command line over the file")
        #expect(launch.settings.maximumTunnels == 10, "the command line over the file")
        #expect(launch.settings.multiplexerLimits.maximumFlows == 33, "the file over the default")
        #expect(launch.settings.opener.connectTimeout == .seconds(4), "the file over the default")
        #expect(launch.settings.multiplexerLimits.maximumUDPFlows == TunnelMultiplexer.Limits().maximumUDPFlows, "the default where neither says")
        #expect(launch.settings.host == TunnelServerLaunchOptions.defaultHost)
    }
}
