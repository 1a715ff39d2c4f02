import Foundation
import Testing
@testable import SimpleTunnelServices

@Suite("Durable leases of both families: one of each, together, kept across restarts")
struct DualStackLeaseTests {
    static func v4(_ text: String) throws -> IPv4Address { try #require(IPv4Address(text)) }
    static func v6(_ text: String) throws -> IPv6Address { try #require(IPv6Address(text)) }

    static func book(v6End: String = "fd00:90::4") throws -> DualStackLeaseBook {
        DualStackLeaseBook(
            ipv4: LeaseBook(range: try v4("10.90.0.2")...(try v4("10.90.0.9"))),
            ipv6: AddressLeaseBook(range: try v6("fd00:90::2")...(try v6(v6End))))
    }

    @Test func aClientGetsOneAddressOfEachFamilyAndAKnownOneGetsBothBack() throws {
        var book = try Self.book()
        let anonymous = book.lease(for: nil, holder: 1)
        #expect(anonymous == .init(ipv4: try Self.v4("10.90.0.2"), ipv6: try Self.v6("fd00:90::2"), replaced: nil))
        let aliceGrant = book.lease(for: "login:alice", holder: 2)
        let alice = try #require(aliceGrant)
        #expect(alice.ipv4?.description == "10.90.0.3" && alice.ipv6?.description == "fd00:90::3")
        let released = book.release(alice.ipv4, ipv6: alice.ipv6, holder: 2)
        #expect(released)
        // Others skip both of alice's addresses while others are free; she gets both back.
        let bobGrant = book.lease(for: "login:bob", holder: 3)
        let bob = try #require(bobGrant)
        #expect(bob.ipv4?.description == "10.90.0.4" && bob.ipv6?.description == "fd00:90::4")
        let again = book.lease(for: "login:alice", holder: 4)
        #expect(again == .init(ipv4: alice.ipv4, ipv6: alice.ipv6, replaced: nil))
        // A new session of alice takes both over from the old one.
        let takeover = book.lease(for: "login:alice", holder: 5)
        #expect(takeover == .init(ipv4: alice.ipv4, ipv6: alice.ipv6, replaced: 4))
        #expect(book.ipv6?.heldCount == 3)
    }

    @Test func whenTheIPv6PoolIsExhaustedNoAddressOfEitherFamilyIsHeld() throws {
        var book = try Self.book(v6End: "fd00:90::2")
        let first = book.lease(for: nil, holder: 1)
        let second = book.lease(for: nil, holder: 2)
        #expect(first != nil)
        #expect(second == nil)
        #expect(book.heldCount == 1, "the IPv4 address picked for the refused lease is free again")
        #expect(book.ipv6?.heldCount == 1)
    }

    @Test func anIPv6OnlyBookLeasesIPv6AddressesAlone() throws {
        var book = DualStackLeaseBook(ipv4: nil, ipv6: AddressLeaseBook(range: try Self.v6("fd00:90::2")...(try Self.v6("fd00:90::2"))))
        let first = book.lease(for: "login:alice", holder: 1)
        #expect(first == .init(ipv4: nil, ipv6: try Self.v6("fd00:90::2"), replaced: nil))
        let takeover = book.lease(for: "login:alice", holder: 2)
        #expect(takeover == .init(ipv4: nil, ipv6: try Self.v6("fd00:90::2"), replaced: 1))
        let exhausted = book.lease(for: nil, holder: 3)
        #expect(exhausted == nil)
        #expect(book.heldCount == 1)
        let released = book.release(nil, ipv6: try Self.v6("fd00:90::2"), holder: 2)
        #expect(released)
        #expect(book.heldCount == 0)
    }

    @Test func aHugeIPv6PoolIsCountedWithoutOverflowing() throws {
        #expect(IPv6Address.count(of: try Self.v6("fd00::")...(try Self.v6("fd00::ffff:ffff:ffff:ffff"))) == Int.max)
        #expect(IPv6Address.count(of: try Self.v6("fd00::2")...(try Self.v6("fd00::3"))) == 2)
        var book = AddressLeaseBook(range: try Self.v6("fd00::")...(try Self.v6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")))
        let grant = book.lease(for: nil, holder: 1)
        #expect(grant == .fresh(try Self.v6("fd00::")))
    }

    @Test func theLeaseFileKeepsBothFamiliesAndStillReadsAFileWithIPv4Only() throws {
        let directory = NSTemporaryDirectory() + "dual-leases-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = LeaseFile(path: directory + "/leases.json")
        let range = try Self.v4("10.90.0.2")...(try Self.v4("10.90.0.9"))
        let range6 = try Self.v6("fd00:90::2")...(try Self.v6("fd00:90::9"))

        // Today's file, with IPv4 leases only: alice keeps her IPv4 address and gains an IPv6 one.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(#"{"leases": {"login:alice": "10.90.0.5"}}"#.utf8).write(to: URL(fileURLWithPath: file.path))
        let pool = try AddressPool(range: range, ipv6Range: range6, file: file)
        _ = pool.lease(for: nil)
        let alice = try #require(pool.lease(for: "login:alice"))
        #expect(alice.address?.description == "10.90.0.5" && alice.ipv6Address?.description == "fd00:90::3")
        let saved = try String(contentsOfFile: file.path, encoding: .utf8)
        #expect(saved.contains(#""ipv6Leases""#) && saved.contains("fd00:90::3"), "\(saved)")

        // After a restart both come back, even when others ask first.
        let restarted = try AddressPool(range: range, ipv6Range: range6, file: file)
        #expect(restarted.lease(for: "login:bob")?.ipv6Address?.description == "fd00:90::2")
        let back = try #require(restarted.lease(for: "login:alice"))
        #expect(back.address?.description == "10.90.0.5" && back.ipv6Address?.description == "fd00:90::3")

        // A server that offers IPv4 only still reads the file.
        let ipv4Only = try AddressPool(range: range, file: file)
        #expect(ipv4Only.lease(for: "login:alice")?.ipv6Address == nil)

        try Data(#"{"leases": {}, "ipv6Leases": {"login:alice": "fd00::zz"}}"#.utf8).write(to: URL(fileURLWithPath: file.path))
        #expect {
            _ = try AddressPool(range: range, ipv6Range: range6, file: file)
        } throws: { error in
            "\(error)".contains("the IPv6 lease of login:alice, \"fd00::zz\", is not an IPv6 address")
        }
    }

    @Test func aPoolIsRoutedAsTheFewestNetworksThatCoverIt() throws {
        #expect(IPv6Network.covering(try Self.v6("fd00::2")...(try Self.v6("fd00::ff"))).map(\.description)
            == ["fd00::2/127", "fd00::4/126", "fd00::8/125", "fd00::10/124", "fd00::20/123", "fd00::40/122", "fd00::80/121"])
        #expect(IPv6Network.covering(try Self.v6("::")...(try Self.v6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))).map(\.description) == ["::/0"])
        #expect(IPv6Network.covering(try Self.v6("fd00::3")...(try Self.v6("fd00::3"))).map(\.description) == ["fd00::3/128"])
    }

    @Test func theServerTakesTheAddressBelowTheIPv6Pool() throws {
        #expect(ServerIPLayer.defaultDeviceAddress(for: try Self.v6("fd00:90::2")...(try Self.v6("fd00:90::9")))?.description == "fd00:90::1")
        #expect(ServerIPLayer.defaultDeviceAddress(for: try Self.v6("fd00:90::1")...(try Self.v6("fd00:90::9"))) == nil)
        var options = ServerIPLayerOptions()
        options.mtu = 1279
        #expect {
            _ = try ServerIPLayer.ipv6DeviceAddress(for: try Self.v6("fd00:90::2")...(try Self.v6("fd00:90::9")), options: options)
        } throws: { error in
            "\(error)".contains("needs an MTU of at least 1280, not 1279")
        }
    }
}
