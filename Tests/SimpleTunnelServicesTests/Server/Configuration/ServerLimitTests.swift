import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

/// Every entry of `ServerLimit.all`, through the whole launch: a value in the
/// file reaches the running server, its flag wins over the file, and a bad
/// value is refused naming the key or the flag. Where each lands is read here
/// independently of the table, so an entry wired to the wrong field fails.
@Suite("Server limits, one table", .timeLimit(.minutes(3)))
struct ServerLimitTests {
    /// How a test writes one limit and reads it back from the running settings.
    struct Sample: Sendable {
        let file: PropertyListValue
        let fileReads: String
        let flag: String
        let flagReads: String
        /// File values each outside the key's type or range.
        let badFile: [PropertyListValue]
        let badFlag: String
        /// A flag value just past the file's range (nil: the flag's syntax bounds it).
        var tooLargeFlag: String? = nil
        let runtime: @Sendable (TunnelServer.Settings) -> String

        static func count(_ runtime: @escaping @Sendable (TunnelServer.Settings) -> Int) -> Sample {
            Sample(
                file: 7, fileReads: "7", flag: "9", flagReads: "9", badFile: [0, .integer(1 << 24 + 1), .string("7")], badFlag: "0",
                tooLargeFlag: "\(1 << 24 + 1)", runtime: { "\(runtime($0))" })
        }

        static func mebibytes(_ runtime: @escaping @Sendable (TunnelServer.Settings) -> Int) -> Sample {
            Sample(
                file: 3, fileReads: "3", flag: "5", flagReads: "5", badFile: [0, .integer(1 << 20 + 1), .real(2.5)], badFlag: "0",
                tooLargeFlag: "\(1 << 20 + 1)", runtime: { "\(runtime($0) >> 20)" })
        }

        static func seconds(_ runtime: @escaping @Sendable (TunnelServer.Settings) -> TimeAmount) -> Sample {
            Sample(
                file: .real(2.5), fileReads: "2.5", flag: "3", flagReads: "3", badFile: [0, 86_401, .string("5")], badFlag: "0",
                tooLargeFlag: "86401", runtime: { runtime($0).userSeconds })
        }
    }

    static let samples: [String: Sample] = [
        "Tunnels": .count { $0.maximumTunnels },
        "TunnelsPerLogin": .count { $0.tunnelsPerLogin },
        "FlowsPerTunnel": .count { $0.multiplexerLimits.maximumFlows },
        "UDPFlowsPerTunnel": .count { $0.multiplexerLimits.maximumUDPFlows },
        "FirstMessageTimeout": .seconds { $0.firstMessageTimeout },
        "ConnectTimeout": .seconds { $0.opener.connectTimeout },
        "UDPIdleTimeout": .seconds { $0.multiplexerLimits.udpIdleTimeout },
        "FlowDrainTimeout": .seconds { $0.opener.drainTimeout },
        // 0 is "never" here, so it is no bad value.
        "IdleTimeout": Sample(
            file: .real(2.5), fileReads: "2.5", flag: "3", flagReads: "3", badFile: [-1, 86_401, .string("5")], badFlag: "soon",
            tooLargeFlag: "86401", runtime: { $0.liveness.idleTimeout?.userSeconds ?? "never" }),
        "TunnelBufferMiB": .mebibytes { $0.multiplexerLimits.tunnelBufferBudget },
        "EarlyDataMiB": .mebibytes { $0.multiplexerLimits.tunnelEarlyDataBudget },
        "ServerBufferMiB": .mebibytes { $0.bufferBudget.limit },
        "FlowSockets": .count { $0.opener.socketBudget.serverLimit },
        "Startups": Sample(
            file: .string("5:40:20"), fileReads: "5:40:20", flag: "8:50:32", flagReads: "8:50:32",
            badFile: [.string("50:30:10"), .string("30:10"), .integer(1 << 24 + 1), .real(3)], badFlag: "many",
            tooLargeFlag: "\(1 << 24 + 1):50:\(1 << 24 + 1)", runtime: { "\($0.startups)" }),
        "StartupsPerAddress": .count { $0.startupsPerAddress },
        "TLSHandshakeTimeout": .seconds { $0.tlsHandshakeTimeout },
        "LoginChecks": .count { $0.authentication?.checker.limits.concurrent ?? 0 },
        "LoginChecksPerAddress": .count { $0.authentication?.checker.limits.perSource ?? 0 },
        "LoginFailures": .count { $0.authentication?.limiter.maximumFailures ?? 0 },
    ]

    static let keys = ServerLimit.all.map(\.key)

    /// A launch with logins on (so the login limits apply) and an open-file limit that caps nothing.
    static func launch(limits: [String: PropertyListValue], arguments: [String] = []) throws -> TunnelServerLaunch {
        let folder = try TemporaryDirectory()
        var users = UserDatabase()
        users.set("alice", hash: try PasswordHash(password: "a", iterations: PasswordHash.minimumIterations))
        try users.write(to: folder.path + "/users")
        let configuration = try folder.write("server.plist", binary: SampleConfiguration.withServer(["Limits": .dictionary(limits)]))
        let options = try TunnelServerLaunchOptions.parse(
            ["--config", configuration, "--users", folder.path + "/users", "--state-directory", folder.path] + arguments)
        return try withExtendedLifetime(folder) { try TunnelServerLaunch.prepare(options, resolvConf: nil, openFileLimit: 1 << 20) }
    }

    static func flag(of key: String) throws -> String {
        try #require(ServerLimit.all.first { $0.key == key }).flag
    }

    @Test func everyLimitHasASampleAndOneKeyFlagAndName() {
        #expect(Set(Self.keys) == Set(Self.samples.keys), "a limit added to the table needs a sample here, and a sample a limit")
        for values in [Self.keys, ServerLimit.all.map(\.flag), ServerLimit.all.map(\.name)] {
            #expect(Set(values).count == values.count, "\(values)")
        }
    }

    @Test(arguments: keys)
    func aFileValueReachesTheRunningServer(key: String) throws {
        let sample = try #require(Self.samples[key])
        let defaults = sample.runtime(try Self.launch(limits: [:]).settings)
        #expect(defaults != sample.fileReads, "the sample must differ from the default")
        #expect(sample.runtime(try Self.launch(limits: [key: sample.file]).settings) == sample.fileReads)
    }

    @Test(arguments: keys)
    func theFlagWinsOverTheFile(key: String) throws {
        let sample = try #require(Self.samples[key])
        let launch = try Self.launch(limits: [key: sample.file], arguments: [try Self.flag(of: key), sample.flag])
        #expect(sample.runtime(launch.settings) == sample.flagReads)
    }

    @Test(arguments: keys)
    func aBadFileValueNamesItsKey(key: String) throws {
        let sample = try #require(Self.samples[key])
        for value in sample.badFile {
            #expect(performing: { _ = try Self.launch(limits: [key: value]) }, throws: { "\($0)".contains("Server.Limits.\(key)") })
        }
    }

    @Test(arguments: keys)
    func aBadFlagValueNamesTheFlag(key: String) throws {
        let sample = try #require(Self.samples[key])
        let flag = try Self.flag(of: key)
        do {
            _ = try Self.launch(limits: [:], arguments: [flag, sample.badFlag])
            Issue.record("\(flag) \(sample.badFlag) was taken")
        } catch {
            // A seconds flag is refused as it is parsed; the others as the launch checks them.
            let message = error is TunnelServerLaunchError ? "\(error)" : TunnelServerLaunchOptions.message(for: error)
            #expect(message.contains(flag), "\(message)")
        }
    }

    @Test(arguments: keys)
    func aFlagPastTheFilesRangeIsRefusedNamingTheFlag(key: String) throws {
        let sample = try #require(Self.samples[key])
        let tooLarge = try #require(sample.tooLargeFlag, "every limit's flag has a range to pass")
        let flag = try Self.flag(of: key)
        // An Int.max budget in MiB, shifted to bytes, would wrap to a negative budget.
        for value in [tooLarge, "\(Int.max)"] {
            do {
                _ = try Self.launch(limits: [:], arguments: [flag, value])
                Issue.record("\(flag) \(value) was taken")
            } catch {
                let message = error is TunnelServerLaunchError ? "\(error)" : TunnelServerLaunchOptions.message(for: error)
                #expect(message.contains(flag), "\(message)")
            }
        }
    }

    @Test func anIdleTimeoutOfZeroMeansNeverFromTheFileAsFromTheFlag() throws {
        #expect(try Self.launch(limits: [:]).settings.liveness.idleTimeout == .seconds(900), "the default")
        #expect(try Self.launch(limits: ["IdleTimeout": 0]).settings.liveness.idleTimeout == nil)
        #expect(try Self.launch(limits: ["IdleTimeout": 60], arguments: ["--idle-timeout", "0"]).settings.liveness.idleTimeout == nil)
        #expect(try Self.launch(limits: ["IdleTimeout": 0], arguments: ["--idle-timeout", "30"]).settings.liveness.idleTimeout == .seconds(30))
    }

    @Test(arguments: keys)
    func everyFlagIsAnOptionOfTheCommand(key: String) throws {
        let sample = try #require(Self.samples[key])
        let unchanged = String(reflecting: TunnelServerLaunchOptions.none)
        #expect(String(reflecting: try TunnelServerLaunchOptions.parse([])) == unchanged, "the comparison sees only the options")
        let parsed = try TunnelServerLaunchOptions.parse([try Self.flag(of: key), sample.flag])
        #expect(String(reflecting: parsed) != unchanged, "\(key)'s flag changes no option")
    }

    @Test func theLoginLimitsApplyOnlyWithLogins() throws {
        let folder = try TemporaryDirectory()
        var options = TunnelServerLaunchOptions.none
        options.stateDirectory = folder.path
        options.loginChecks = 0
        let launch = try TunnelServerLaunch.prepare(options, resolvConf: nil)
        #expect(launch.settings.authentication == nil, "without logins a login limit is not used, so not checked")
    }

    @Test func theFirstMessageTimeoutDefaultsByModeAndTheFileSetsBoth() throws {
        let folder = try TemporaryDirectory()
        var options = TunnelServerLaunchOptions.none
        options.stateDirectory = folder.path
        options.plaintext = true
        #expect(try TunnelServerLaunch.prepare(options, resolvConf: nil).settings.firstMessageTimeout == .seconds(300))
        options.plaintext = false
        #expect(try TunnelServerLaunch.prepare(options, resolvConf: nil).settings.firstMessageTimeout == .seconds(10))
        options.configurationPath = try folder.write(
            "server.plist", binary: SampleConfiguration.withServer(["Limits": .dictionary(["FirstMessageTimeout": 20])]))
        options.plaintext = true
        #expect(try TunnelServerLaunch.prepare(options, resolvConf: nil).settings.firstMessageTimeout == .seconds(20))
    }

    @Test func flowSocketsLeftOutAreWhatTheOpenFileLimitLeaves() throws {
        let folder = try TemporaryDirectory()
        var options = TunnelServerLaunchOptions.none
        options.stateDirectory = folder.path
        let derived = try TunnelServerLaunch.prepare(options, resolvConf: nil, openFileLimit: 1000)
        #expect(derived.settings.opener.socketBudget.serverLimit == FlowSocketBudget.serverLimit(openFileLimit: 1000, maximumTunnels: 256))
        options.maximumFlowSockets = 100_000
        let capped = try TunnelServerLaunch.prepare(options, resolvConf: nil, openFileLimit: 1000)
        #expect(capped.settings.opener.socketBudget.serverLimit == derived.settings.opener.socketBudget.serverLimit)
        #expect(capped.warnings.contains { $0.hasPrefix("--max-flow-sockets 100000:") }, "\(capped.warnings)")
        options.maximumFlowSockets = nil
        options.maximumTunnels = 7
        let fewerTunnels = try TunnelServerLaunch.prepare(options, resolvConf: nil, openFileLimit: 1000)
        #expect(
            fewerTunnels.settings.opener.socketBudget.serverLimit == FlowSocketBudget.serverLimit(openFileLimit: 1000, maximumTunnels: 7),
            "merged after the tunnel limit it is taken from")
    }

    /// The example is documentation: it shows every key, commented out or not,
    /// and the values it sets are the defaults.
    @Test func theExampleShowsEveryLimitAndOnlyThem() throws {
        let path = RepositoryPaths.root.appendingPathComponent("Examples/tunnel-server.plist").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let start = try #require(text.range(of: "<key>Limits</key>"))
        let end = try #require(text.range(of: "</dict>", range: start.upperBound..<text.endIndex))
        let section = String(text[start.upperBound..<end.lowerBound])
        let shown = section.components(separatedBy: "<key>").dropFirst().compactMap { $0.components(separatedBy: "</key>").first }
        #expect(Set(shown) == Set(Self.keys), "Limits in Examples/tunnel-server.plist")
        #expect(shown.count == Set(shown).count, "each key once: \(shown)")

        let example = try TunnelServerConfiguration.load(contentsOf: path, resolvConf: nil).server.limits
        #expect(!example.values.isEmpty)
        func merged(_ limits: TunnelServerSettings.Limits) throws -> [String] {
            var merge = LimitMerge(settings: TunnelServer.Settings(), logins: .init(), openFileLimit: 1 << 20)
            try ServerLimit.merge(.none, limits, into: &merge)
            let logins = try #require(merge.logins)
            return ServerLimit.all.map { $0.describe(merge.settings) } + ["\(logins.checks.concurrent) \(logins.checks.perSource) \(logins.failures)"]
        }
        #expect(try merged(example) == merged([:]), "the example's values are the defaults")
    }
}
