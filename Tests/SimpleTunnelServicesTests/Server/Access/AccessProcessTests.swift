import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// Groups and users on the built tunnel-server, as an operator runs it: a
/// configuration file and a users file, clients logging in, SIGHUP.
@Suite("Users and groups on a running tunnel-server", .timeLimit(.minutes(3)))
struct AccessProcessTests {
    let directory = NSTemporaryDirectory() + "access-\(UUID().uuidString.prefix(8))"
    var configPath: String { directory + "/tunnel-server.plist" }
    static let passwords = ["alice": "staff-pw", "bob": "contractor-pw", "ivy": "ip-only-pw", "mallory": "disabled-pw", "old": "expired-pw", "guest": "guest-pw"]

    /// `users`: login → its entry's XML (`<key>Groups</key>…`).
    func writeConfiguration(contractorsAllow: String, users: [String: String], extraGroup: String = "") throws {
        let entries = users.sorted { $0.key < $1.key }.map { "<key>\($0.key)</key><dict>\($0.value)</dict>" }.joined()
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
            <key>DNS</key><dict><key>Servers</key><array><string>10.90.0.1</string></array></dict>
            <key>Server</key><dict>
              <key>ListenAddress</key><string>127.0.0.1</string>
              <key>Groups</key><dict>
                <key>staff</key><dict/>
                <key>contractors</key><dict><key>Policy</key><dict><key>Allow</key><array><string>\(contractorsAllow)</string></array></dict></dict>
                <key>ip-only</key><dict><key>AppLayer</key><false/></dict>
                \(extraGroup)
              </dict>
              <key>Users</key><dict>\(entries)</dict>
            </dict></dict></plist>
            """
        try Data(plist.utf8).write(to: URL(fileURLWithPath: configPath))
    }

    static func groups(_ names: String...) -> String {
        "<key>Groups</key><array>" + names.map { "<string>\($0)</string>" }.joined() + "</array>"
    }

    static func expires(_ date: Date) -> String {
        "<key>Expires</key><date>\(date.formatted(.iso8601))</date>"
    }

    func login(_ login: String, port: Int, group: EventLoopGroup) async throws -> (RawTunnelPeer, TunnelMessage?) {
        let peer = try await RawTunnelPeer.connect(
            port: port, group: group, sending: .authenticate(login: login, password: Self.passwords[login] ?? "", offersRetryLater: true))
        return (peer, await peer.next(timeout: .seconds(30)))
    }

    func open(_ identifier: TunnelConnectionIdentifier, _ request: TunnelOpenRequest, on peer: RawTunnelPeer) async throws -> TunnelMessage? {
        try await peer.send(.open(identifier: identifier, request: request))
        return await peer.next(timeout: .seconds(15)) { if case .openResult = $0 { false } else { true } }
    }

    func tcp(_ port: Int) -> TunnelOpenRequest { .tcp(TunnelEndpoint(host: "127.0.0.1", port: port)) }

    @Test(.timeLimit(.minutes(3)))
    func eachLoginMeetsItsGroupsRulesAndAReloadMovesItLive() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let group = MultiThreadedEventLoopGroup.singleton
        let echo = try await LoopbackPeers.echoServer(group: group)
        defer { echo.close(promise: nil) }
        let echoPort = try #require(echo.localAddress?.port)
        let otherPort = echoPort == 65535 ? echoPort - 1 : echoPort + 1
        try OperatedServer.write(Self.passwords, to: directory + "/users")
        // Whole seconds, as the file writes it; far enough ahead for the server to start and the guest to log in.
        let guestExpiry = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 15).rounded(.down))
        var users = [
            "alice": Self.groups("staff"), "bob": Self.groups("contractors"), "ivy": Self.groups("ip-only"),
            "mallory": Self.groups("staff") + "<key>Disabled</key><true/>",
            "old": Self.expires(Date(timeIntervalSince1970: 1_577_836_800)), "guest": Self.expires(guestExpiry),
        ]
        try writeConfiguration(contractorsAllow: "127.0.0.1:\(otherPort)", users: users)
        let server = try ExternalProcess([
            BuiltPrograms.tunnelServer, "serve", "--port", "0", "--plaintext", "--config", configPath, "--users", directory + "/users",
            "--no-ip-layer", "--control", directory + "/server.sock", "--state-directory", directory + "/state",
        ])
        defer { server.terminate() }
        let started = try #require(await server.waitForOutput(containing: "control socket at", timeout: 30))
        let port = try #require(started.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
        // The guest logs in first; its tunnel is watched until its login expires, while the rest runs.
        let (guest, guestAnswer) = try await login("guest", port: port, group: group)
        #expect(guestAnswer == .authenticateResult(.success))
        let guestClosed = NIOLockedValueBox<Date?>(nil)
        guest.channel.closeFuture.whenComplete { _ in guestClosed.withLockedValue { $0 = Date() } }

        // Staff reaches the echo; the contractor, allowed only another port, is refused as by the server's policy.
        let (alice, aliceAnswer) = try await login("alice", port: port, group: group)
        #expect(aliceAnswer == .authenticateResult(.success))
        #expect(try await open(1, tcp(echoPort), on: alice) == .openResult(identifier: 1, result: .success))
        let (bob, bobAnswer) = try await login("bob", port: port, group: group)
        #expect(bobAnswer == .authenticateResult(.success))
        #expect(try await open(1, tcp(echoPort), on: bob) == .openResult(identifier: 1, result: .refused, detail: .notAllowedByPolicy))
        #expect(server.outputSoFar.contains("group \"contractors\": no Allow rule matches"), "\(server.outputSoFar)")

        // A group with AppLayer false: neither TCP nor UDP opens.
        let (ivy, ivyAnswer) = try await login("ivy", port: port, group: group)
        #expect(ivyAnswer == .authenticateResult(.success))
        #expect(try await open(1, tcp(echoPort), on: ivy) == .openResult(identifier: 1, result: .refused, detail: .notAllowedByPolicy))
        #expect(try await open(3, .udp, on: ivy) == .openResult(identifier: 3, result: .refused, detail: .notAllowedByPolicy))

        // Disabled and expired logins: refused with the right password, told why, and the log says why.
        let (_, malloryAnswer) = try await login("mallory", port: port, group: group)
        #expect(malloryAnswer == .authenticateResult(.refused, detail: .disabled))
        let (_, oldAnswer) = try await login("old", port: port, group: group)
        #expect(oldAnswer == .authenticateResult(.refused, detail: .expired))
        #expect(await server.waitForOutput(containing: "expired 2020-01-01T00:00:00Z") != nil)
        #expect(server.outputSoFar.contains("reason=disabled"), "\(server.outputSoFar)")
        var plain = TunnelClientConnection.Settings(host: "127.0.0.1", port: port, tls: nil)
        plain.credentials = ("mallory", Self.passwords["mallory"] ?? "")
        let refused = await #expect(throws: TunnelLoginRefusedError.self) {
            _ = try await TunnelClientConnection.connect(settings: plain, group: group, logger: TunnelFixture.logger)
        }
        #expect(refused?.description.contains("this login has been disabled") == true, "\(refused.map(\.description) ?? "")")
        #expect(refused?.description.contains("wrong") == false)

        // The guest's open tunnel ends when its login expires, with no reload.
        #expect(await guest.waitForClose(timeout: .seconds(30)))
        let late = try #require(guestClosed.withLockedValue { $0 }).timeIntervalSince(guestExpiry)
        print("an expired login's tunnel closed \(late) s after its expiry")
        #expect(late >= 0 && late < 1.5, "closed \(late) s after the expiry")
        let (_, guestAgain) = try await login("guest", port: port, group: group)
        #expect(guestAgain == .authenticateResult(.refused, detail: .expired))

        // SIGHUP moves bob to staff and disables ivy: bob's open tunnel meets staff's rules at its next flow, ivy's ends.
        users["bob"] = Self.groups("staff")
        users["ivy"] = Self.groups("ip-only") + "<key>Disabled</key><true/>"
        try writeConfiguration(contractorsAllow: "127.0.0.1:\(otherPort)", users: users)
        kill(server.processIdentifier, SIGHUP)
        let reloaded = try #require(await server.waitForOutput(containing: "configuration reloaded"))
        #expect(reloaded.contains(#"login "bob": groups contractors → staff"#), "\(reloaded)")
        #expect(reloaded.contains(#"login "ivy": disabled"#), "\(reloaded)")
        #expect(try await open(5, tcp(echoPort), on: bob) == .openResult(identifier: 5, result: .success))
        #expect(await ivy.waitForClose(timeout: .seconds(5)))

        // A bad file (a group no one defined) changes nothing: bob stays staff, and the log names the key.
        users["bob"] = Self.groups("contractor")
        try writeConfiguration(contractorsAllow: "127.0.0.1:\(otherPort)", users: users)
        kill(server.processIdentifier, SIGHUP)
        let kept = try #require(await server.waitForOutput(containing: "configuration not reloaded"))
        #expect(kept.contains("Server.Users.bob.Groups[0]") && kept.contains("did you mean contractors?"), "\(kept)")
        #expect(try await open(7, tcp(echoPort), on: bob) == .openResult(identifier: 7, result: .success))
        // And back to contractors: its rules hold again for bob's next flow, while his tunnel stays up.
        users["bob"] = Self.groups("contractors")
        try writeConfiguration(contractorsAllow: "127.0.0.1:\(otherPort)", users: users)
        kill(server.processIdentifier, SIGHUP)
        #expect(await Loopback.waitUntil(seconds: 10) { server.outputSoFar.contains("groups staff → contractors") })
        #expect(try await open(9, tcp(echoPort), on: bob) == .openResult(identifier: 9, result: .refused, detail: .notAllowedByPolicy))
        #expect(alice.channel.isActive && bob.channel.isActive, "reloads end only the tunnels of logins no longer allowed")
        await alice.close()
        await bob.close()
    }

    /// Each bad input stops the server at start, naming the file, the key path and what was meant.
    @Test(.timeLimit(.minutes(2)), arguments: [
        ("<key>Users</key><dict><key>bob</key><dict><key>Groups</key><array><string>nobody</string></array></dict></dict>",
         "Server.Users.bob.Groups[0]: expected the name of a group in Server.Groups"),
        ("<key>Groups</key><dict><key>g</key><dict><key>Policy</key><dict><key>Deny</key><array><string>10.0.0.0/99</string></array></dict></dict></dict>",
         "Server.Groups.g.Policy.Deny[0]: expected a destination rule"),
        ("<key>Users</key><dict><key>bob</key><dict><key>Expires</key><string>Friday</string></dict></dict>",
         "Server.Users.bob.Expires: expected a date"),
        ("<key>Groups</key><dict><key>g</key><dict><key>Limits</key><dict><key>Tunnels</key><integer>0</integer></dict></dict></dict>",
         "Server.Groups.g.Limits.Tunnels: expected a positive integer"),
    ])
    func badInputStopsTheServerAtStart(server entries: String, message: String) async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>Server</key><dict>\(entries)</dict></dict></plist>
            """
        try Data(plist.utf8).write(to: URL(fileURLWithPath: configPath))
        let server = try ExternalProcess([
            BuiltPrograms.tunnelServer, "serve", "--port", "0", "--plaintext", "--config", configPath, "--no-ip-layer",
            "--state-directory", directory + "/state",
        ])
        let (status, output) = await server.finish(timeout: 30)
        #expect(status != 0)
        #expect(output.contains("configuration file \(configPath): \(message)"), "\(output)")
    }
}
