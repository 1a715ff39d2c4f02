import Foundation
import Testing
@testable import SimpleTunnelServices

/// One login cannot take every tunnel: past `--max-tunnels-per-login` its
/// next login is refused, as a refusal the client is told of, and counted;
/// other logins are untouched, and a tunnel that ends gives its place back.
@Suite("Password authentication: tunnels per login", .timeLimit(.minutes(2)))
struct TunnelsPerLoginTests {
    @Test func theLoginPastItsCapIsRefusedAndOthersStillGetIn() async throws {
        let server = try await OperatedServer.start(users: ["alice": "wonderland", "bob": "builder"])
        let cap = TunnelServer.Settings().tunnelsPerLogin
        #expect(cap == 16)
        var tunnels: [TunnelClientConnection] = []
        for _ in 0..<cap {
            tunnels.append(try await server.connect("alice", "wonderland"))
        }
        let refused = await #expect(throws: TunnelLoginRefusedError.self) { _ = try await server.connect("alice", "wonderland") }
        #expect(refused?.description.contains("as many tunnels as the server allows one login") == true)
        let bob = try await server.connect("bob", "builder")
        #expect(try await bob.fetchConfiguration() == [:])

        // One of alice's tunnels ends: its place is hers again.
        await tunnels.removeFirst().close()
        let registry = server.fixture.server
        try await waitUntil { await registry.status().tunnels.filter { $0.login == "alice" }.count == cap - 1 }
        tunnels.append(try await server.connect("alice", "wonderland"))
        #expect(await registry.status().tunnels.filter { $0.login == "alice" }.count == cap)

        for tunnel in tunnels + [bob] { await tunnel.close() }
        await server.stop()
    }

    private func waitUntil(_ condition: @escaping () async -> Bool) async throws {
        for _ in 0..<200 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("the condition never held")
    }
}
