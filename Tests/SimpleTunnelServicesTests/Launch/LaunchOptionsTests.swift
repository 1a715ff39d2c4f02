import Foundation
import Testing
@testable import SimpleTunnelServices

/// The serving options are parsed from real command lines here, as
/// `tunnel-server serve` parses them, and merged by the one launch.
@Suite("Server launch: the command line's options, parsed once and merged once")
struct LaunchOptionsTests {
    func launch(_ arguments: [String]) throws -> TunnelServerLaunch {
        let state = NSTemporaryDirectory() + "launch-options-\(UUID().uuidString)"
        let options = try TunnelServerLaunchOptions.parse(["--state-directory", state] + arguments)
        return try TunnelServerLaunch.prepare(options, resolvConf: nil)
    }

    @Test func flagsOverrideTheFileWhichOverridesTheDefaults() throws {
        let folder = try TemporaryDirectory()
        let path = try folder.write("server.plist", binary: .dictionary([
            "Server": .dictionary(["Limits": .dictionary(["Tunnels": .integer(7), "ConnectTimeout": .integer(4)])])
        ]))
        let fromFile = try launch(["--config", path])
        #expect(fromFile.settings.maximumTunnels == 7)
        #expect(fromFile.settings.opener.connectTimeout == .seconds(4))
        let fromFlags = try launch(["--config", path, "--max-tunnels", "9", "--connect-timeout", "2.5"])
        #expect(fromFlags.settings.maximumTunnels == 9)
        #expect(fromFlags.settings.opener.connectTimeout == .milliseconds(2500))
        let defaults = try launch([])
        #expect(defaults.settings.maximumTunnels == TunnelServer.Settings().maximumTunnels)
    }

    @Test func theIPLayerStartsOnlyWhenAskedAndItsDeviceSettingsComeFromTheSameMerge() throws {
        #expect(try launch([]).ipLayer == nil)
        let asked = try #require(try launch(["--tun", "stun7", "--tun-address", "10.9.0.1", "--tun-address", "fd00:9::1", "--mtu", "1380"]).ipLayer)
        #expect(asked.isRequired)
        #expect(asked.options.deviceName == "stun7")
        #expect(asked.options.deviceAddress == IPv4Address("10.9.0.1"))
        #expect(asked.options.deviceIPv6Address == IPv6Address("fd00:9::1"))
        #expect(asked.options.mtu == 1380)
        #expect(asked.options.leaseFile?.path.hasSuffix("/" + LeaseFile.defaultName) == true)

        let folder = try TemporaryDirectory()
        let pool = try folder.write("pool.plist", binary: .dictionary([
            "IPv4": .dictionary(["Pool": .dictionary(["StartAddress": .string("10.90.0.2"), "EndAddress": .string("10.90.0.9")])])
        ]))
        let fromPool = try launch(["--config", pool])
        #expect(fromPool.ipLayer?.isRequired == false)
        #expect(fromPool.ipLayer?.options.deviceName == "stun%d")
        // Clients are told the device's MTU with their lease.
        #expect(fromPool.configuration.otherIPv4Keys["MTU"] == PropertyListValue(1400))
        #expect(try launch(["--config", pool, "--no-ip-layer"]).ipLayer == nil)
    }

    @Test func badIPLayerOptionsAreRefusedByTheParserAndByTheLaunch() throws {
        #expect(throws: (any Error).self) { try TunnelServerLaunchOptions.parse(["--mtu", "100"]) }
        #expect(throws: (any Error).self) { try TunnelServerLaunchOptions.parse(["--tun", "x", "--no-ip-layer"]) }
        #expect(throws: (any Error).self) { try TunnelServerLaunchOptions.parse(["--tun-address", "10.0.0.1", "--tun-address", "10.0.0.2"]) }
        // Built by hand (as a library user would), the launch checks the same.
        var options = TunnelServerLaunchOptions.none
        options.mtu = 100
        #expect {
            try TunnelServerLaunch.prepare(options, resolvConf: nil)
        } throws: { error in
            "\(error)".contains("--mtu 100: expected 576 to 65535")
        }
    }

    @Test func aReloadTakesTheUsersFileItHoldsSoABrokenOneDoesNotHoldBackTheRest() throws {
        let folder = try TemporaryDirectory()
        let users = folder.path + "/users"
        try OperatedServer.write(["alice": "wonderland"], to: users)
        var options = try TunnelServerLaunchOptions.parse(["--state-directory", folder.path + "/state", "--users", users])
        let running = try TunnelServerLaunch.prepare(options, resolvConf: nil)
        let held = try #require(running.usersFile)

        // The users file is broken, and the policy changed: the reload's merge still succeeds,
        // with the file the server holds (it reads that one again on its own).
        try "not a users file\n".write(toFile: users, atomically: true, encoding: .utf8)
        options.deny = ["10.0.0.0/8"]
        let reread = try TunnelServerLaunch.prepare(options, loadedUsers: held, resolvConf: nil)
        #expect(reread.usersFile === held)
        #expect(reread.policy.denyRules.map(\.text) == ["10.0.0.0/8"])
        // Without it, the broken file is read and refused, as at a start.
        #expect(throws: TunnelServerLaunchError.self) { try TunnelServerLaunch.prepare(options, resolvConf: nil) }
        // Another path is another file: read, not taken from the one held.
        let others = folder.path + "/others"
        try OperatedServer.write(["bob": "builder"], to: others)
        options.usersPath = others
        #expect(try TunnelServerLaunch.prepare(options, loadedUsers: held, resolvConf: nil).usersFile?.users.users["bob"] != nil)
    }
}
