import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Server control socket: status and kick", .timeLimit(.minutes(2)))
struct ServerControlTests {
    /// A login with a quote and a backslash: peer-controlled text, escaped in both forms.
    static let oddLogin = #"o"brien\x"#

    @Test(.timeLimit(.minutes(3)))
    func statusNamesEveryLoginAndKickEndsOnlyThatOnesTunnel() async throws {
        let server = try await OperatedServer.start(users: ["alice": "wonderland", Self.oddLogin: "pw"])
        let alice = try await server.connect("alice", "wonderland")
        let odd = try await server.connect(Self.oddLogin, "pw")
        let aliceForward = try await server.forward(through: alice)
        let oddForward = try await server.forward(through: odd)
        #expect(await server.echoes(through: aliceForward))
        #expect(await server.echoes(through: oddForward))

        let response = try await server.ask(.init(type: "status"))
        let status = try #require(response.status)
        #expect(Set(status.tunnels.compactMap(\.login)) == ["alice", Self.oddLogin])
        #expect(status.totals.tunnels == 2 && status.sinceStart.tunnelsAccepted == 2)
        for tunnel in status.tunnels {
            #expect(tunnel.tlsVersion == "TLSv1.3", "\(tunnel)")
            #expect(tunnel.bytesFromClient >= 10_000 && tunnel.bytesToClient >= 10_000, "\(tunnel)")
            #expect(tunnel.peer.hasPrefix("127.0.0.1:"))
        }
        // JSON carries the login as a string value, escaped; the text form quotes it.
        let json = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(status)) as? [String: Any]
        let logins = (json?["tunnels"] as? [[String: Any]])?.compactMap { $0["login"] as? String }
        #expect(Set(logins ?? []) == ["alice", Self.oddLogin])
        #expect(status.text.contains(#"login "o\"brien\\x""#), "\(status.text)")

        let kicked = try await server.ask(.init(type: "kick", login: "alice"))
        #expect(kicked.ok && kicked.ended == 1)
        #expect(await AdmissionPeers.eventually(timeout: .seconds(10)) { !alice.channel.isActive })
        #expect(await server.echoes(through: oddForward), "the other tunnel carries on")
        let after = try #require(try await server.ask(.init(type: "status")).status)
        #expect(after.tunnels.map(\.login) == [Self.oddLogin])

        // Not a ban: alice logs in again. Kicking nobody says so.
        let again = try await server.connect("alice", "wonderland")
        let none = try await server.ask(.init(type: "kick", login: "mallory"))
        #expect(!none.ok && none.ended == 0 && none.error?.contains("mallory") == true)

        await aliceForward.close()
        await oddForward.close()
        await again.close()
        await odd.close()
        await server.stop()
    }

    @Test(.timeLimit(.minutes(3)))
    func malformedAndUnknownRequestsGetAnErrorNotACrash() async throws {
        let server = try await OperatedServer.start(users: ["alice": "wonderland"])
        for payload in ["not json", #"{"login":"x"}"#, #"{"type":"shutdown"}"#, #"{"type":"kick"}"#] {
            let answer = try await ControlSocketClient.exchange(
                Data(payload.utf8), path: server.control.path, program: "tunnel-server", group: server.fixture.group)
            let response = try JSONDecoder().decode(ServerControlProtocol.Response.self, from: answer)
            #expect(!response.ok && response.error != nil, "\(payload)")
        }
        #expect(try await server.ask(.init(type: "status")).ok)
        await server.stop()
    }

    @Test func theDefaultPathIsRunForRootElseTheUsersRuntimeFolder() {
        #expect(ServerControlProtocol.defaultPath(environment: [:], isRoot: true) == "/run/simpletunnel/server.sock")
        #expect(ServerControlProtocol.defaultPath(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], isRoot: false) == "/run/user/1000/simpletunnel/server.sock")
        #expect(ServerControlProtocol.defaultPath(environment: [:], isRoot: false) == "/tmp/simpletunnel-\(getuid())/server.sock")
    }

    @Test func onlyRootAndTheServersOwnUserMayAsk() {
        #expect(ControlSocketServer.mayAsk(0))
        #expect(ControlSocketServer.mayAsk(getuid()))
        #expect(!ControlSocketServer.mayAsk(nil))
        #expect(!ControlSocketServer.mayAsk(getuid() == 65534 ? 65533 : 65534))
    }
}
