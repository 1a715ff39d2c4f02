import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Reloading the users file of a running server", .timeLimit(.minutes(2)))
struct UsersReloadTests {
    @Test(.timeLimit(.minutes(3)))
    func anAddedUserLogsInAfterTheReloadWhileAnotherTunnelKeepsFlowing() async throws {
        let server = try await OperatedServer.start(users: ["alice": "wonderland"])
        let alice = try await server.connect("alice", "wonderland")
        let forward = try await server.forward(through: alice)
        await #expect(throws: TunnelLoginRefusedError.self) { _ = try await server.connect("bob", "builder") }
        try server.writeUsers(["alice": "wonderland", "bob": "builder"])
        let reloaded = ReloadFlag()
        // One connection through alice's tunnel, echoing before, during and after the reload.
        let echoed = try await EchoStream.run(port: forward.localAddress.port ?? 0, group: server.fixture.group, rounds: 20) {
            reloaded.set(server.fixture.server.reloadUsers(from: server.usersFile, logger: server.logger).applied)
        }
        #expect(reloaded.value && echoed == 20 * 4096)
        let bob = try await server.connect("bob", "builder")
        #expect(alice.channel.isActive)
        #expect(await server.echoes(through: forward))
        #expect(server.log.all.contains { $0.message == "users file reloaded" && $0.metadata["added"] == #""bob""# })
        await bob.close()
        await forward.close()
        await alice.close()
        await server.stop()
    }

    @Test(.timeLimit(.minutes(3)))
    func aRemovedUserLosesTheTunnelAtTheReloadAndCannotComeBack() async throws {
        let server = try await OperatedServer.start(users: ["alice": "wonderland", "bob": "builder"])
        let alice = try await server.connect("alice", "wonderland")
        let bob = try await server.connect("bob", "builder")
        try server.writeUsers(["alice": "wonderland"])
        let start = ContinuousClock.now
        #expect(server.fixture.server.reloadUsers(from: server.usersFile, logger: server.logger).applied)
        // The reload closes the tunnel itself (milliseconds here); the bound leaves room for a loaded machine.
        #expect(await AdmissionPeers.eventually(timeout: .seconds(5)) { !bob.channel.isActive })
        print("a removed user's tunnel closed \(ContinuousClock.now - start) after the reload")
        #expect(alice.channel.isActive, "alice stays")
        await #expect(throws: TunnelLoginRefusedError.self) { _ = try await server.connect("bob", "builder") }
        await alice.close()
        await server.stop()
    }

    @Test(.timeLimit(.minutes(3)))
    func aChangedPasswordKeepsTheTunnelAndTheNewOneLogsIn() async throws {
        let server = try await OperatedServer.start(users: ["alice": "wonderland"])
        let alice = try await server.connect("alice", "wonderland")
        try server.writeUsers(["alice": "looking glass"])
        #expect(server.fixture.server.reloadUsers(from: server.usersFile, logger: server.logger).applied)
        try await Task.sleep(for: .milliseconds(200))
        #expect(alice.channel.isActive)
        await #expect(throws: TunnelLoginRefusedError.self) { _ = try await server.connect("alice", "wonderland") }
        let again = try await server.connect("alice", "looking glass")
        await again.close()
        await alice.close()
        await server.stop()
    }

    @Test(.timeLimit(.minutes(3)))
    func aBadOrExposedFileChangesNothingAndTheLogSaysWhy() async throws {
        let server = try await OperatedServer.start(users: ["alice": "wonderland"])
        let alice = try await server.connect("alice", "wonderland")
        // Half a file: alice's line is gone, then a line that does not parse.
        try Data("bob:not-a-hash\n".utf8).write(to: URL(fileURLWithPath: server.usersPath))
        chmod(server.usersPath, 0o600)
        #expect(!server.fixture.server.reloadUsers(from: server.usersFile, logger: server.logger).applied)
        #expect(server.log.all.contains { $0.message.contains("not reloaded, keeping the 1 users it had") && $0.message.contains("line 1") })
        try server.writeUsers(["bob": "builder"])
        chmod(server.usersPath, 0o644)
        #expect(!server.fixture.server.reloadUsers(from: server.usersFile, logger: server.logger).applied)
        #expect(server.log.all.contains { $0.message.contains("not reloaded") && $0.message.contains("UNPROTECTED") })
        try await Task.sleep(for: .milliseconds(200))
        #expect(alice.channel.isActive, "nothing was applied")
        let again = try await server.connect("alice", "wonderland")
        await #expect(throws: TunnelLoginRefusedError.self) { _ = try await server.connect("bob", "builder") }
        await again.close()
        await alice.close()
        await server.stop()
    }

    @Test func aReloadSaysWhoWasAddedRemovedOrChanged() throws {
        let path = NSTemporaryDirectory() + "users-change-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try OperatedServer.write(["alice": "a", "bob": "b", "carol": "c"], to: path)
        let file = try UsersFile.load(path: path)
        var users = file.users
        users.set("dave", hash: try PasswordHash(password: "d", iterations: PasswordHash.minimumIterations))
        users.set("alice", hash: try PasswordHash(password: "new", iterations: PasswordHash.minimumIterations))
        _ = users.remove("bob")
        try users.write(to: path)
        let change = try file.reload()
        #expect(change.added == ["dave"] && change.removed == ["bob"] && change.passwordChanged == ["alice"])
        #expect(!file.stillKnows("bob") && file.stillKnows("dave"))
    }
}

/// Set from the echo stream's midway hook.
final class ReloadFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    func set(_ value: Bool) { lock.withLock { done = value } }
    var value: Bool { lock.withLock { done } }
}
