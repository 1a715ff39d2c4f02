import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// The built programs as a user runs them: what they say when a port is
/// taken, a number is out of range, a file is too open, and what they leave
/// alone. Each runs the real executable from the build folder.
@Suite("Command line: errors that say what to do", .timeLimit(.minutes(3)))
struct CommandLineTests {
    static let group = MultiThreadedEventLoopGroup.singleton

    /// A fresh folder for state, sockets and files.
    static func temporaryFolder() throws -> String {
        let path = NSTemporaryDirectory() + "command-line-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs `program` to its end, feeding `input`; kills it after `timeout` seconds.
    static func run(_ program: String, _ arguments: [String], input: String = "", timeout: Double = 30) async throws -> (status: Int32, output: String) {
        let process = try ExternalProcess([program] + arguments, standardInput: input.isEmpty ? .empty : .text(input))
        return await process.finish(timeout: timeout)
    }

    /// A loopback port held by a listener for as long as the channel is open.
    static func takenPort() async throws -> (channel: Channel, port: Int) {
        let channel = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        return (channel, channel.localAddress?.port ?? 0)
    }

    @Test func secondsOutOfRangeAreRefusedWithTheRangeInsteadOfCrashing() async throws {
        for option in ["--connect-timeout", "--first-message-timeout", "--udp-idle-timeout", "--flow-drain-timeout", "--tls-handshake-timeout", "--idle-timeout"] {
            let result = try await Self.run(BuiltPrograms.tunnelServer, [option, "1e10"])
            #expect(result.status == 64, "\(option): \(result)")
            #expect(result.output.contains("at most 86400") || result.output.contains("to 86400"), "\(option): \(result.output)")
        }
        let client = try await Self.run(BuiltPrograms.tunnelClient, ["config", "--keepalive", "1e10"])
        #expect(client.status == 64, "\(client)")
        #expect(client.output.contains("86400"), "\(client.output)")
        let negative = try await Self.run(BuiltPrograms.tunnelServer, ["--idle-timeout", "-1"])
        #expect(negative.status == 64, "\(negative)")
    }

    @Test func theTunAddressIsOnePerFamily() async throws {
        let twoIPv4 = try await Self.run(BuiltPrograms.tunnelServer, ["--tun-address", "10.90.0.1", "--tun-address", "10.90.0.9", "--no-ip-layer"])
        #expect(twoIPv4.status != 0)
        #expect(twoIPv4.output.contains("at most one address of each family"), "\(twoIPv4.output)")
        let notAnAddress = try await Self.run(BuiltPrograms.tunnelServer, ["--tun-address", "fd00:90::zz"])
        #expect(notAnAddress.status != 0)
        #expect(notAnAddress.output.contains("expected an IPv4 or IPv6 address"), "\(notAnAddress.output)")
    }

    @Test func aMistypedOptionOrSubcommandIsNamedAsSuchNotReadAsAPort() async throws {
        for (arguments, named) in [
            (["--confg", "x.plist"], "Unknown option '--confg'"), (["--metric", "127.0.0.1:9464"], "Unknown option '--metric'"),
            (["pasword", "alice"], "Unknown subcommand 'pasword'. Did you mean 'passwd'?"), (["8890"], "Unexpected argument '8890'"),
        ] {
            let result = try await Self.run(BuiltPrograms.tunnelServer, arguments)
            #expect(result.status == 64, "\(arguments): \(result)")
            #expect(result.output.contains(named) && !result.output.contains("positional"), "\(arguments): \(result.output)")
        }
        // Apple's form is still Apple's form: a port, then the configuration file.
        let apple = try await Self.run(BuiltPrograms.tunnelServer, ["8890", "/nonexistent/apple-config.plist"])
        #expect(apple.status != 0)
        #expect(apple.output.contains("cannot read configuration file /nonexistent/apple-config.plist"), "\(apple.output)")
    }

    @Test func theServerNamesATakenPort() async throws {
        let taken = try await Self.takenPort()
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let result = try await Self.run(BuiltPrograms.tunnelServer, ["--port", "\(taken.port)", "--state-directory", folder])
        #expect(result.status != 0)
        #expect(result.output.contains("cannot listen on 127.0.0.1:\(taken.port): address already in use"), "\(result.output)")
        try await taken.channel.close()
    }

    @Test func theClientBindsItsForwardsFirstAndFailsFastOnATakenPort() async throws {
        let taken = try await Self.takenPort()
        // No server at all: a client that connected first would retry for ever instead of failing.
        let nowhere = try await Self.takenPort()
        let serverPort = nowhere.port
        try await nowhere.channel.close()
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let result = try await Self.run(
            BuiltPrograms.tunnelClient,
            ["forward", "-L", "\(taken.port):127.0.0.1:9", "--server", "127.0.0.1:\(serverPort)", "--insecure", "--control", folder + "/c.sock"],
            timeout: 20)
        #expect(result.status == 1, "\(result)")
        #expect(result.output.contains("cannot listen on 127.0.0.1:\(taken.port): address already in use"), "\(result.output)")
        try await taken.channel.close()
    }

    @Test func bothProgramsPrintTheirVersion() async throws {
        for program in [BuiltPrograms.tunnelServer, BuiltPrograms.tunnelClient] {
            let result = try await Self.run(program, ["--version"])
            #expect(result.status == 0)
            #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines) == SimpleTunnelVersion.current)
        }
    }

    @Test func helpShowsEachDefaultOnceAndForwardsHaveMeaningfulPlaceholders() async throws {
        let serve = try await Self.run(BuiltPrograms.tunnelServer, ["serve", "--help"])
        let client = try await Self.run(BuiltPrograms.tunnelClient, ["forward", "--help"])
        for text in [serve.output, client.output] {
            // ArgumentParser adds "(default: ...)" for a default value: the help text must not say it again.
            let doubled = text.split(separator: "\n").filter { $0.contains("Default") && $0.contains("(default:") }
            #expect(doubled.isEmpty, "\(doubled)")
        }
        #expect(client.output.contains("-L <[bind:]port:host:hostport>"), "\(client.output)")
        #expect(client.output.contains("-U <[bind:]port:host:hostport>"), "\(client.output)")
    }

    @Test func withoutArgumentsTheServerLeavesTheHostNetworkAlone() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try ExternalProcess([BuiltPrograms.tunnelServer, "--port", "0", "--state-directory", folder])
        defer { server.terminate() }
        let output = try #require(await server.waitForOutput(containing: "listening on 127.0.0.1:", timeout: 30))
        #expect(output.contains("no IP layer"), "\(output)")
        #expect(!output.contains("IP layer on") && !output.contains("IP layer off"), "\(output)")
    }

    @Test func anExplicitTunThatCannotBeSetUpStopsTheServer() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Longer than a Linux interface name may be (15 bytes): it fails without touching the host's network.
        let result = try await Self.run(
            BuiltPrograms.tunnelServer, ["--port", "0", "--state-directory", folder, "--tun", "a-name-far-too-long-for-linux"])
        #expect(result.status != 0, "\(result)")
        #expect(result.output.contains("cannot set up the IP layer asked for with --tun"), "\(result.output)")
        #expect(!result.output.contains("listening on 127.0.0.1:"), "\(result.output)")
    }

    @Test func aConfigurationWithoutIPv4ServesFlows() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/server.plist"
        try """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>DNS</key><dict><key>Servers</key><array><string>127.0.0.53</string></array></dict></dict></plist>
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let server = try ExternalProcess([
            BuiltPrograms.tunnelServer, "--port", "0", "--plaintext", "--state-directory", folder, "--config", path, "--no-ip-layer",
        ])
        defer { server.terminate() }
        let output = try #require(await server.waitForOutput(containing: "listening on 127.0.0.1:", timeout: 30), "\(server.outputSoFar)")
        let port = try #require(output.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
        let group = MultiThreadedEventLoopGroup.singleton
        let echo = try await LoopbackPeers.echoServer(group: group)
        defer { echo.close(promise: nil) }
        let peer = try await RawTunnelPeer.connect(port: port, group: group)
        try await peer.send(.open(identifier: 1, request: .tcp(TunnelEndpoint(host: "127.0.0.1", port: try #require(echo.localAddress?.port)))))
        #expect(await peer.next() == .openResult(identifier: 1, result: .success))
        try await peer.send(.data(identifier: 1, payload: ByteBuffer(string: "a flow")), .close(identifier: 1, direction: .write))
        #expect(await peer.collectData(for: 1).data == ByteBuffer(string: "a flow"))
        // No pool, no IP layer: an IP open is refused as the protocol says, and the flows go on.
        try await peer.send(.open(identifier: 3, request: .plainIP))
        #expect(await peer.next() == .openResult(identifier: 3, result: .internalError))
        await peer.close()
    }

    @Test func aPasswordFileOthersCanReadIsRefused() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/password"
        try "secret\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        let result = try await Self.run(BuiltPrograms.tunnelClient, ["config", "--user", "alice", "--password-file", path, "--insecure"])
        #expect(result.status != 0)
        #expect(result.output.contains("chmod 600 \(path)"), "\(result.output)")
    }

    @Test func aTLSClientAgainstAPlaintextServerIsToldAtOnce() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try ExternalProcess([BuiltPrograms.tunnelServer, "--port", "0", "--plaintext", "--state-directory", folder])
        defer { server.terminate() }
        let output = try #require(await server.waitForOutput(containing: "listening on 127.0.0.1:", timeout: 30))
        let port = try #require(output.split(separator: "listening on 127.0.0.1:").last?.prefix { $0.isNumber })
        // The server's first-message timeout is 10 s: an answer well before it is the server's own refusal.
        let client = try await Self.run(BuiltPrograms.tunnelClient, ["config", "--server", "127.0.0.1:\(port)", "--insecure"], timeout: 8)
        #expect(client.status == 1, "\(client)")
        #expect(client.output.contains("running with --plaintext"), "\(client.output)")
    }

    @Test func passwdCreatesItsFolderConfirmsListsAndRemoves() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let users = folder + "/etc/simpletunnel/users"
        let added = try await Self.run(BuiltPrograms.tunnelServer, ["passwd", "dave", "--users", users, "--iterations", "100000"], input: "password\n")
        #expect(added.status == 0, "\(added)")
        #expect(added.output.contains("added dave in \(users)"), "\(added.output)")
        let attributes = try FileManager.default.attributesOfItem(atPath: folder + "/etc/simpletunnel")
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        let listed = try await Self.run(BuiltPrograms.tunnelServer, ["passwd", "--list", "--users", users])
        #expect(listed.output.split(separator: "\n") == ["dave"], "\(listed.output)")
        let removed = try await Self.run(BuiltPrograms.tunnelServer, ["passwd", "dave", "--remove", "--users", users])
        #expect(removed.output.contains("dave removed"), "\(removed.output)")
        #expect(try UserDatabase.load(path: users).users.isEmpty)
    }

    @Test func passwdSaysWhatIsMissingInsteadOfGuessing() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let noFile = try await Self.run(BuiltPrograms.tunnelServer, ["passwd", "erin"], input: "pw\n")
        #expect(noFile.status == 64 && noFile.output.contains("give --users FILE"), "\(noFile)")
        let missing = folder + "/nobody-here"
        let listed = try await Self.run(BuiltPrograms.tunnelServer, ["passwd", "--list", "--users", missing])
        #expect(listed.status != 0 && listed.output.contains("\(missing) does not exist: no users to list"), "\(listed)")
        let removed = try await Self.run(BuiltPrograms.tunnelServer, ["passwd", "erin", "--remove", "--users", missing])
        #expect(removed.status != 0 && removed.output.contains("does not exist"), "\(removed)")
        #expect(!FileManager.default.fileExists(atPath: missing))
        let owner = try await Self.run(BuiltPrograms.tunnelServer, ["passwd", "erin", "--users", missing, "--owner", "no-such-user-here"])
        #expect(owner.status == 64 && owner.output.contains("useradd --system"), "\(owner)")
    }

    /// On a terminal the new password is asked twice, as passwd(1) does (`script` gives the program one).
    @Test(.enabled(if: TestRequirements.met(FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "script(1) from util-linux")))
    func passwdOnATerminalAsksTwiceAndRefusesAMismatch() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let users = folder + "/users"
        let command = "\(BuiltPrograms.tunnelServer) passwd frank --users \(users) --iterations 100000"
        let mismatch = try await Self.run("/usr/bin/script", ["-qec", command, "/dev/null"], input: "first-one\nsecond-one\n")
        #expect(mismatch.status != 0 && mismatch.output.contains("the two passwords differ"), "\(mismatch)")
        #expect(!FileManager.default.fileExists(atPath: users))
        let matched = try await Self.run("/usr/bin/script", ["-qec", command, "/dev/null"], input: "same-password\nsame-password\n")
        #expect(matched.status == 0 && matched.output.contains("added frank"), "\(matched)")
        #expect(try UserDatabase.load(path: users).verify(login: "frank", password: "same-password"))
    }
}
