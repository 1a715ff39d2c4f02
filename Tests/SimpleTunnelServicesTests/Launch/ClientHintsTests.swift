import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// What a newcomer following the README meets on the client side, with the
/// built programs: one message per failure, naming the option that cures it.
@Suite("Command line: the client's hints", .timeLimit(.minutes(2)))
struct ClientHintsTests {
    static let group = MultiThreadedEventLoopGroup.singleton
    static let asNobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    static var canActAsNobody: Bool { geteuid() == 0 && ExternalProcess.which("setpriv") }

    /// A loopback port nothing listens on, below Linux's ephemeral range
    /// (32768 and up): the kernel never hands it to another test's outgoing
    /// connection before the program under test binds it.
    static func freePort() async throws -> Int {
        for _ in 0..<100 {
            let port = Int.random(in: 20_000..<32_768)
            guard let channel = try? await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: port).get() else { continue }
            try await channel.close()
            return port
        }
        throw NoFreePort()
    }

    struct NoFreePort: Error, CustomStringConvertible {
        var description: String { "no loopback port from 20000 to 32767 could be bound in 100 tries" }
    }

    /// A listener that counts the connections it is offered: a client that connects shows here.
    static func countingListener() async throws -> (channel: Channel, port: Int, accepted: NIOLockedValueBox<Int>) {
        let accepted = NIOLockedValueBox(0)
        let channel = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                accepted.withLockedValue { $0 += 1 }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return (channel, channel.localAddress?.port ?? 0, accepted)
    }

    /// A tunnel-server on a free loopback port, with `arguments`.
    static func server(_ arguments: [String]) async throws -> (process: ExternalProcess, port: Int) {
        let server = try ExternalProcess([BuiltPrograms.tunnelServer, "--port", "0"] + arguments)
        let output = try #require(await server.waitForOutput(containing: "listening on 127.0.0.1:", timeout: 30), "\(server.outputSoFar)")
        let port = try #require(output.split(separator: "listening on 127.0.0.1:").last?.prefix { $0.isNumber })
        return (server, try #require(Int(port)))
    }

    static func occurrences(of text: String, in output: String) -> Int {
        output.components(separatedBy: text).count - 1
    }

    @Test(.timeLimit(.minutes(3)))
    func aWrongPinIsReportedOnce() async throws {
        let folder = try CommandLineTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await Self.server(["--state-directory", folder])
        defer { server.process.terminate() }
        let result = try await CommandLineTests.run(
            BuiltPrograms.tunnelClient, ["config", "--server", "127.0.0.1:\(server.port)", "--pin-sha256", String(repeating: "ab", count: 32)],
            timeout: 20)
        #expect(result.status == 1, "\(result)")
        #expect(Self.occurrences(of: "does not match the pinned", in: result.output) == 1, "\(result.output)")
    }

    @Test(.timeLimit(.minutes(3)))
    func connectingByAddressToACertificateForANameSuggestsServerName() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let folder = try CommandLineTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await Self.server([
            "--state-directory", folder, "--cert", pki.certificatePath("wrong-host"), "--key", pki.keyPath("wrong-host"),
        ])
        defer { server.process.terminate() }
        let result = try await CommandLineTests.run(
            BuiltPrograms.tunnelClient, ["config", "--server", "127.0.0.1:\(server.port)", "--ca", pki.caFile], timeout: 20)
        #expect(result.status == 1, "\(result)")
        #expect(result.output.contains("it is for elsewhere.example: connect with --server-name elsewhere.example"), "\(result.output)")
        #expect(!result.output.contains("check the CA file"), "\(result.output)")
        #expect(Self.occurrences(of: "--server-name elsewhere.example", in: result.output) == 1, "\(result.output)")
    }

    @Test(.timeLimit(.minutes(3)), .enabled(if: TestRequirements.met(ClientHintsTests.canActAsNobody, "root and setpriv"), "acts as user nobody"))
    func anUnprivilegedIPClientFailsAtOnceWithoutConnecting() async throws {
        let listener = try await Self.countingListener()
        defer { listener.channel.close(promise: nil) }
        let folder = try CommandLineTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let result = try await CommandLineTests.run(
            "setpriv", Array(Self.asNobody.dropFirst()) + [
                BuiltPrograms.forAnyUser.tunnelClient, "ip", "--server", "127.0.0.1:\(listener.port)", "--insecure", "--control", folder + "/c.sock",
            ], timeout: 20)
        #expect(result.status == 1, "\(result)")
        #expect(result.output.contains("needs root or CAP_NET_ADMIN: run it with sudo"), "\(result.output)")
        #expect(Self.occurrences(of: "CAP_NET_ADMIN", in: result.output) == 1, "\(result.output)")
        #expect(listener.accepted.withLockedValue { $0 } == 0, "it connected before failing")
    }

    @Test(.timeLimit(.minutes(3)))
    func aTunNameTooLongGetsThatReasonAloneBeforeConnecting() async throws {
        let listener = try await Self.countingListener()
        defer { listener.channel.close(promise: nil) }
        let folder = try CommandLineTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let result = try await CommandLineTests.run(
            BuiltPrograms.tunnelClient,
            ["ip", "--tun", "a-name-far-too-long", "--server", "127.0.0.1:\(listener.port)", "--insecure", "--control", folder + "/c.sock"],
            timeout: 20)
        #expect(result.status == 1, "\(result)")
        #expect(result.output.contains("Linux interface names are at most 15"), "\(result.output)")
        #expect(!result.output.contains("%d") && !result.output.contains("CAP_NET_ADMIN"), "\(result.output)")
        #expect(listener.accepted.withLockedValue { $0 } == 0, "it connected before failing")
    }

    /// A client that keeps trying a server that is not there: enough for a
    /// control socket. Returned once its SOCKS listener is up. The listen port
    /// is incidental here: one the full suite found taken by the time the
    /// client bound it is logged with what held it, and another is tried.
    static func client(runtimeFolder: String, server: Int) async throws -> ExternalProcess {
        var process: ExternalProcess?
        for _ in 0..<3 {
            let port = try await freePort()
            let started = try ExternalProcess([
                "XDG_RUNTIME_DIR=\(runtimeFolder)", BuiltPrograms.tunnelClient, "socks", "--listen", "127.0.0.1:\(port)",
                "--server", "127.0.0.1:\(server)", "--insecure",
            ])
            process = started
            _ = await started.waitForOutput(containing: "SOCKS5 proxy on", timeout: 20)
            guard started.outputSoFar.contains("address already in use") else { return started }
            let holders = (try? await ExternalProcess.run("/usr/bin/ss", ["-tanp"], timeout: 10)).map { String(decoding: $0.output, as: UTF8.self) } ?? "(ss failed)"
            print("the listen port \(port) was taken; what held it:\n" + holders.split(separator: "\n").filter { $0.contains(":\(port) ") }.joined(separator: "\n"))
        }
        return try #require(process)
    }

    /// The status of the client answering on `path`, once one does.
    static func status(at path: String, seconds: Double = 20) async -> TunnelClientStatus? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if let status = try? await ControlClient.request("status", path: path, group: group).status { return status }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    // These two start clients and wait on their control sockets several times
    // over, beside the full suite's parallel run: the suite's two minutes.
    @Test(.enabled(if: TestRequirements.met(ClientHintsTests.canActAsNobody, "root and setpriv"), "acts as user nobody"))
    func statusAsAnotherUserSaysTheSocketIsRootsAndSuggestsSudo() async throws {
        let folder = try CommandLineTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/simpletunnel/client.sock"
        let client = try await Self.client(runtimeFolder: folder, server: try await Self.freePort())
        defer { client.terminate() }
        #expect(await Self.status(at: path) != nil, "\(client.outputSoFar)")
        // As after `sudo -E tunnel-client ...`: the same default path, in a folder only root may enter.
        let result = try await CommandLineTests.run(
            "setpriv", Array(Self.asNobody.dropFirst()) + ["env", "XDG_RUNTIME_DIR=\(folder)", BuiltPrograms.forAnyUser.tunnelClient, "status"])
        #expect(result.status == 1, "\(result)")
        #expect(result.output.contains("the control socket \(path) belongs to root (uid 0)"), "\(result.output)")
        #expect(result.output.contains("`sudo tunnel-client status`"), "\(result.output)")
        _ = try await ControlClient.request("stop", path: path, group: Self.group)
        #expect(await client.finish(timeout: 10).status == 0)
    }

    @Test
    func aSecondClientTakesTheControlSocketOverWhenTheFirstStops() async throws {
        let folder = try CommandLineTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/simpletunnel/client.sock"
        let (firstServer, secondServer) = (try await Self.freePort(), try await Self.freePort())
        let first = try await Self.client(runtimeFolder: folder, server: firstServer)
        defer { first.terminate() }
        #expect(await Self.status(at: path)?.server == "127.0.0.1:\(firstServer)", "\(first.outputSoFar)")
        let second = try await Self.client(runtimeFolder: folder, server: secondServer)
        defer { second.terminate() }
        #expect(await second.waitForOutput(containing: "takes the control socket over when that one stops", timeout: 20) != nil, "\(second.outputSoFar)")

        _ = try await ControlClient.request("stop", path: path, group: Self.group)
        #expect(await first.finish(timeout: 10).status == 0)
        // The client still running answers `status` now, instead of "no client".
        let deadline = ContinuousClock.now + .seconds(15)
        var answered: String?
        while ContinuousClock.now < deadline, answered != "127.0.0.1:\(secondServer)" {
            answered = try? await ControlClient.request("status", path: path, group: Self.group).status?.server
            try? await Task.sleep(for: .milliseconds(100))
        }
        #expect(answered == "127.0.0.1:\(secondServer)", "\(second.outputSoFar)")
        #expect(second.outputSoFar.contains("has stopped: this one answers there now"), "\(second.outputSoFar)")
        _ = try await ControlClient.request("stop", path: path, group: Self.group)
        #expect(await second.finish(timeout: 10).status == 0)
    }
}
