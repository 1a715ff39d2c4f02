import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Durable leases: known clients get their address back, a new session replaces the old", .timeLimit(.minutes(2)))
struct LeaseTests {
    static func address(_ text: String) throws -> IPv4Address { try #require(IPv4Address(text)) }

    static func book(_ start: String = "10.90.0.2", _ end: String = "10.90.0.4", remembered: [String: IPv4Address] = [:]) throws -> LeaseBook {
        LeaseBook(range: try address(start)...(try address(end)), remembered: remembered)
    }

    @Test func aKnownClientGetsItsAddressBackAndOthersAvoidItWhileTheyCan() throws {
        var book = try Self.book()
        let grant1 = book.lease(for: "login:alice", holder: 1)
        #expect(grant1 == .fresh(try Self.address("10.90.0.2")))
        let released = book.release(try Self.address("10.90.0.2"), holder: 1)
        #expect(released)
        // Anonymous clients and other known clients skip alice's address while others are free.
        let grant2 = book.lease(for: nil, holder: 2)
        #expect(grant2 == .fresh(try Self.address("10.90.0.3")))
        let grant3 = book.lease(for: "login:bob", holder: 3)
        #expect(grant3 == .fresh(try Self.address("10.90.0.4")))
        let grant4 = book.lease(for: "login:alice", holder: 4)
        #expect(grant4 == .fresh(try Self.address("10.90.0.2")))
        #expect(book.remembered == ["login:alice": try Self.address("10.90.0.2"), "login:bob": try Self.address("10.90.0.4")])
    }

    @Test func aRememberedAddressIsGivenAwayOnlyWhenNothingElseIsFree() throws {
        var book = try Self.book("10.90.0.2", "10.90.0.3")
        _ = book.lease(for: "login:alice", holder: 1)
        _ = book.lease(for: "login:bob", holder: 2)
        book.release(try Self.address("10.90.0.2"), holder: 1)
        // Only alice's address is free: carol gets it, and alice's claim to it ends.
        let grant5 = book.lease(for: "login:carol", holder: 3)
        #expect(grant5 == .fresh(try Self.address("10.90.0.2")))
        #expect(book.remembered["login:alice"] == nil)
        let grant6 = book.lease(for: "login:alice", holder: 4)
        #expect(grant6 == nil, "the pool is exhausted")
    }

    @Test func aNewSessionOfTheSameClientTakesTheAddressOverAndTheOldReleaseChangesNothing() throws {
        var book = try Self.book()
        let mine = try Self.address("10.90.0.2")
        let grant7 = book.lease(for: "subject:CN=phone", holder: 1)
        #expect(grant7 == .fresh(mine))
        let grant8 = book.lease(for: "subject:CN=phone", holder: 2)
        #expect(grant8 == .takenOver(mine, from: 1))
        let stale = book.release(mine, holder: 1)
        #expect(!stale, "the replaced session no longer holds it")
        #expect(book.heldCount == 1)
        let released = book.release(mine, holder: 2)
        #expect(released)
        #expect(book.heldCount == 0)
    }

    @Test func aFixedAddressGoesToItsLoginAloneEvenWhenItRememberedAnother() throws {
        let fixed = try Self.address("10.90.0.2")
        var book = try Self.book(remembered: ["login:build": try Self.address("10.90.0.4"), "login:alice": fixed])
        book.reserve(["login:build": fixed])
        // Alice remembered it before the reservation: she forgets it and gets another; so does everyone else.
        #expect(book.remembered["login:alice"] == nil && book.remembered["login:build"] == fixed)
        let alice = book.lease(for: "login:alice", holder: 1)
        #expect(alice == .fresh(try Self.address("10.90.0.3")))
        let anonymous = book.lease(for: nil, holder: 2)
        #expect(anonymous == .fresh(try Self.address("10.90.0.4")))
        let exhausted = book.lease(for: "login:carol", holder: 3)
        #expect(exhausted == nil, "the only free address is reserved")
        let build = book.lease(for: "login:build", holder: 4)
        #expect(build == .fresh(fixed))
        let again = book.lease(for: "login:build", holder: 5)
        #expect(again == .takenOver(fixed, from: 4))
        // Reserved by a reload while another client holds it: the owner takes it over, ending that session.
        book.reserve(["login:build": fixed, "login:alice": try Self.address("10.90.0.4")])
        let moved = book.lease(for: "login:alice", holder: 6)
        #expect(moved == .takenOver(try Self.address("10.90.0.4"), from: 2))
    }

    @Test func aFixedAddressSurvivesARestartAndIsSavedAsItsLoginsLease() throws {
        let directory = try TemporaryDirectory()
        let file = LeaseFile(path: directory.path + "/leases.json")
        let range = try Self.address("10.90.0.2")...(try Self.address("10.90.0.9"))
        let fixed = FixedAddresses(ipv4: ["login:build": try Self.address("10.90.0.7")])
        let pool = try AddressPool(range: range, file: file)
        pool.reserve(fixed)
        #expect(pool.lease(for: "login:other")?.address == (try Self.address("10.90.0.2")))
        #expect(pool.lease(for: "login:build")?.address == (try Self.address("10.90.0.7")))
        let restarted = try AddressPool(range: range, file: file)
        restarted.reserve(fixed)
        #expect(restarted.lease(for: "login:build")?.address == (try Self.address("10.90.0.7")))
        #expect(try String(contentsOfFile: file.path, encoding: .utf8).contains(#""login:build" : "10.90.0.7""#))
    }

    @Test func anonymousClientsNeverTakeOverEachOther() throws {
        var book = try Self.book()
        let grant10 = book.lease(for: nil, holder: 1)
        #expect(grant10 == .fresh(try Self.address("10.90.0.2")))
        let grant11 = book.lease(for: nil, holder: 2)
        #expect(grant11 == .fresh(try Self.address("10.90.0.3")))
        #expect(book.remembered.isEmpty)
    }

    @Test func addressesOutsideAShrunkPoolAreForgotten() throws {
        let book = try Self.book(remembered: ["login:alice": try Self.address("10.90.0.9"), "login:bob": try Self.address("10.90.0.3")])
        #expect(book.remembered == ["login:bob": try Self.address("10.90.0.3")])
    }

    @Test func aStateFolderThatCannotBeWrittenKeepsTheLastGoodFileLogsOnceAndSaysWhenSavesWorkAgain() throws {
        let directory = NSTemporaryDirectory() + "leases-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = LeaseFile(path: directory + "/leases.json")
        let (logger, log) = CapturingLogHandler.logger()
        let range = try Self.address("10.90.0.2")...(try Self.address("10.90.0.20"))
        let pool = try AddressPool(range: range, file: file, logger: logger)
        _ = try #require(pool.lease(for: "login:alice"))
        let good = try String(contentsOfFile: file.path, encoding: .utf8)

        // Every save now fails, as on a full or read-only folder: the replacement cannot even be created.
        let blocker = file.path + ".tmp-\(getpid())"
        try FileManager.default.createDirectory(atPath: blocker + "/in-the-way", withIntermediateDirectories: true)
        let logins = (0..<5).map { "login:user\($0)" }
        let leased = logins.compactMap { pool.lease(for: $0) }
        #expect(leased.count == 5, "the server serves from memory")
        #expect(try String(contentsOfFile: file.path, encoding: .utf8) == good, "the last good file stays whole")
        let errors = log.all.filter { $0.message.hasPrefix("cannot save leases to \(file.path)") }
        #expect(errors.count == 1, "one line a minute, not one per lease: \(log.all.map(\.message))")
        #expect(errors.first?.metadata["unlogged"] == "0")

        try FileManager.default.removeItem(atPath: blocker)
        _ = try #require(pool.lease(for: "login:bob"))
        #expect(log.all.contains { $0.message == "leases saved again" }, "\(log.all.map(\.message))")
        let saved = try String(contentsOfFile: file.path, encoding: .utf8)
        #expect(saved.contains("login:user4") && saved.contains("login:bob") && saved.contains("login:alice"), "\(saved)")
    }

    @Test func theLeaseFileSurvivesARestartAndABadOneIsRefusedByName() throws {
        let directory = NSTemporaryDirectory() + "leases-\(UUID().uuidString)/state"
        defer { try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent) }
        let file = LeaseFile(path: directory + "/leases.json")
        let range = try Self.address("10.90.0.2")...(try Self.address("10.90.0.9"))
        let pool = try AddressPool(range: range, file: file)
        _ = pool.lease(for: nil)
        let alice = try #require(pool.lease(for: "login:alice"))
        #expect(alice.address?.description == "10.90.0.3")
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        // A restarted server (a new pool on the same file) gives alice the same address, even when others ask first.
        let restarted = try AddressPool(range: range, file: file)
        #expect(restarted.lease(for: nil)?.address?.description == "10.90.0.2")
        #expect(restarted.lease(for: "login:bob")?.address?.description == "10.90.0.4")
        #expect(restarted.lease(for: "login:alice")?.address?.description == "10.90.0.3")

        for (contents, expected) in [
            ("not json", "is not a lease file"),
            (#"{"leases": {"login:alice": "10.90.0.300"}}"#, "the lease of login:alice, \"10.90.0.300\", is not an IPv4 address"),
        ] {
            try Data(contents.utf8).write(to: URL(fileURLWithPath: file.path))
            #expect {
                _ = try AddressPool(range: range, file: file)
            } throws: { error in
                "\(error)".contains(file.path) && "\(error)".contains(expected)
            }
        }
    }

    /// A server with users and an IP layer; `login` logs a raw peer in.
    static func login(_ fixture: RawServerFixture, as login: String) async throws -> RawTunnelPeer {
        let peer = try await RawTunnelPeer.connect(port: fixture.port, group: fixture.group, sending: .authenticate(login: login, password: "pw-\(login)"))
        #expect(await peer.next() == .authenticateResult(.success))
        return peer
    }

    static func openIP(_ peer: RawTunnelPeer, identifier: TunnelConnectionIdentifier = 1) async throws -> String? {
        try await peer.send(.open(identifier: identifier, request: .plainIP))
        guard case .openResult(identifier, .success, let configuration?, _)? = await peer.next(skip: { if case .packets = $0 { true } else { false } }) else {
            return nil
        }
        return configuration["IPv4"]?.dictionaryValue?["Address"]?.stringValue
    }

    @Test func overTheWireAReconnectingClientReplacesItsOldSessionAndKeepsItsAddress() async throws {
        var users = UserDatabase()
        for login in ["alice", "bob"] {
            users.set(login, hash: try PasswordHash(password: "pw-\(login)", iterations: PasswordHash.minimumIterations))
        }
        let (fixture, device, layer) = try await IPLayerTests.start(authentication: .init(users: users))
        let alice = try await Self.login(fixture, as: "alice")
        #expect(try await Self.openIP(alice) == "10.90.0.2")
        let bob = try await Self.login(fixture, as: "bob")
        #expect(try await Self.openIP(bob) == "10.90.0.3")

        // Alice comes back on a new tunnel before the server noticed the old one is gone.
        let aliceAgain = try await Self.login(fixture, as: "alice")
        #expect(try await Self.openIP(aliceAgain) == "10.90.0.2")
        #expect(await alice.waitForClose(), "the old session was not ended")
        // Its release, once it closed, did not free the address the new session holds.
        #expect(await AdmissionPeers.eventually { (layer.pool as? AddressPool)?.releasesRequested == 1 }, "the old session's lease was never released")
        #expect(layer.pool.leasedCount == 2)

        // Packets for alice's address now reach the new session only.
        device.inject([ipv4Packet(from: "198.18.2.2", to: "10.90.0.2")])
        guard case .packets(1, let packets)? = await aliceAgain.next() else {
            Issue.record("the new session got no packets")
            return
        }
        #expect(packets.count == 1)

        // Alice leaves, and the release of her current session does free the address.
        await aliceAgain.close()
        for _ in 0..<100 where layer.pool.leasedCount > 1 {
            try await Task.sleep(for: .milliseconds(10))
        }
        let bobAgain = try await Self.login(fixture, as: "bob")
        #expect(try await Self.openIP(bobAgain) == "10.90.0.3", "bob's second session takes over bob's address")
        #expect(await bob.waitForClose())
        await bobAgain.close()
        await fixture.stop()
    }
}
