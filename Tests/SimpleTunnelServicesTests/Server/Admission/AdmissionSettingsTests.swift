import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Admission settings")
struct AdmissionSettingsTests {
    static func limits(_ entries: [String: PropertyListValue]) throws -> TunnelServerSettings.Limits {
        try TunnelServerConfiguration(propertyList: SampleConfiguration.withServer(["Limits": .dictionary(entries)])).server.limits
    }

    @Test func theConfigurationReadsEveryAdmissionKey() throws {
        let limits = try Self.limits([
            "Startups": .string("5:40:20"), "StartupsPerAddress": 3, "TLSHandshakeTimeout": .real(2.5),
            "LoginChecks": 6, "LoginChecksPerAddress": 1, "LoginFailures": 9,
        ])
        #expect(limits["Startups"] == .startups(try StartupsPolicy(start: 5, rate: 40, full: 20)))
        #expect(limits["StartupsPerAddress"] == .count(3))
        #expect(limits["TLSHandshakeTimeout"] == .seconds(.milliseconds(2500)))
        #expect(limits["LoginChecks"] == .count(6) && limits["LoginChecksPerAddress"] == .count(1) && limits["LoginFailures"] == .count(9))
        #expect(try Self.limits(["Startups": 50])["Startups"] == .startups(try StartupsPolicy(start: 50, rate: 100, full: 50)))
        let defaults = TunnelServer.Settings()
        #expect(defaults.startups == .default && defaults.startupsPerAddress == 16 && defaults.tlsHandshakeTimeout == .seconds(5))
    }

    @Test func aBadAdmissionKeyNamesItself() {
        for (key, value) in [("Startups", PropertyListValue.string("30:10")), ("Startups", .string("50:30:10")), ("StartupsPerAddress", 0),
                             ("TLSHandshakeTimeout", 0), ("LoginChecks", .string("4"))] {
            #expect(performing: { _ = try Self.limits([key: value]) }, throws: { "\($0)".contains(key) })
        }
    }

    @Test func flagsOverrideTheConfigurationAndReachTheServer() throws {
        let folder = NSTemporaryDirectory() + "admission-launch-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var users = UserDatabase()
        users.set("alice", hash: try PasswordHash(password: "a", iterations: PasswordHash.minimumIterations))
        try users.write(to: folder + "/users")
        var options = TunnelServerLaunchOptions.none
        options.stateDirectory = folder
        options.usersPath = folder + "/users"
        options.startups = "8:50:32"
        options.startupsPerAddress = 4
        options.tlsHandshakeTimeout = .seconds(3)
        options.loginFailures = 7
        options.loginChecks = 3
        options.loginChecksPerAddress = 1
        let launch = try TunnelServerLaunch.prepare(options, resolvConf: nil)
        #expect(launch.settings.startups == (try StartupsPolicy(start: 8, rate: 50, full: 32)))
        #expect(launch.settings.startupsPerAddress == 4)
        #expect(launch.settings.tlsHandshakeTimeout == .seconds(3))
        #expect(launch.settings.authentication?.limiter.maximumFailures == 7)
        #expect(launch.settings.authentication?.checker.limits.concurrent == 3)
        #expect(launch.settings.authentication?.checker.limits.perSource == 1)
        for edit: (inout TunnelServerLaunchOptions) -> Void in [
            { $0.startups = "many" }, { $0.startupsPerAddress = 0 }, { $0.tlsHandshakeTimeout = .seconds(-1) }, { $0.loginChecks = 0 },
            { $0.loginChecksPerAddress = 0 },
        ] {
            var bad = options
            edit(&bad)
            #expect(throws: TunnelServerLaunchError.self) { try TunnelServerLaunch.prepare(bad, resolvConf: nil) }
        }
    }
}
