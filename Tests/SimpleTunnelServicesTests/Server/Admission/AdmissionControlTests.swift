import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Admission decisions")
struct AdmissionControlTests {
    static let attacker = ClientAddressGroup(text: "192.0.2.66")

    @Test func theEarlyDropRisesFromRateAtStartToAllAtFull() throws {
        let policy = try StartupsPolicy(parsing: "10:30:100")
        #expect(!policy.drops(startups: 9, roll: 0), "below start nothing is dropped")
        #expect(policy.drops(startups: 10, roll: 29) && !policy.drops(startups: 10, roll: 30), "30% at start")
        // Halfway from 10 to 100: 30 + 70 * 45 / 90 = 65%.
        #expect(policy.drops(startups: 55, roll: 64) && !policy.drops(startups: 55, roll: 65))
        #expect(policy.drops(startups: 100, roll: 99), "all at full")
        #expect(try StartupsPolicy(parsing: "20") == StartupsPolicy(start: 20, rate: 100, full: 20), "one number: a wall at FULL")
        for text in ["", "1:2", "a:30:100", "10:101:100", "50:30:10", "0:30:100", "10:30:100:1"] {
            #expect(throws: StartupsPolicyError.self, "\(text)") { try StartupsPolicy(parsing: text) }
        }
    }

    @Test func oneAddressCannotTakeMoreThanItsStartups() {
        var limits = AdmissionControl.Limits()
        limits.startupsPerAddress = 3
        var control = AdmissionControl(limits: limits)
        for _ in 0..<3 {
            #expect(control.accept(from: Self.attacker, roll: 99) == .admit)
        }
        #expect(control.accept(from: Self.attacker, roll: 99) == .refuse(.perAddress))
        #expect(control.accept(from: ClientAddressGroup(text: "192.0.2.1"), roll: 99) == .admit, "other addresses are not affected")
        control.leaveStartups(Self.attacker)
        #expect(control.accept(from: Self.attacker, roll: 99) == .admit, "a closed one makes room")
        #expect(control.unauthenticated == 4)
    }

    @Test func onlyListedNetworksMayConnectAndOthersAreRefusedFirst() throws {
        var limits = AdmissionControl.Limits()
        limits.clientNetworks = try IPNetworkList(parsing: "192.168.1.0/24,fd00:1::/64")
        limits.tunnels = 1
        var control = AdmissionControl(limits: limits)
        let listed = try #require(IPAddress("192.168.1.20"))
        #expect(control.accept(from: ClientAddressGroup(listed), address: listed, roll: 99) == .admit)
        let v6 = try #require(IPAddress("fd00:1::9"))
        #expect(control.accept(from: ClientAddressGroup(v6), address: v6, roll: 99) == .admit)
        let other = try #require(IPAddress("192.168.2.20"))
        #expect(control.accept(from: ClientAddressGroup(other), address: other, roll: 99) == .refuse(.unlistedAddress))
        #expect(control.accept(from: ClientAddressGroup(text: "unknown"), roll: 99) == .refuse(.unlistedAddress), "a peer without an address is not listed")
        // Named as what it is even when the server is full.
        #expect(control.promote(from: ClientAddressGroup(listed)) == .admit)
        #expect(control.accept(from: ClientAddressGroup(other), address: other, roll: 99) == .refuse(.unlistedAddress))
        #expect(control.accept(from: ClientAddressGroup(listed), address: listed, roll: 99) == .refuse(.tunnelsFull))
        #expect(control.unauthenticated == 1, "refused peers hold nothing")
    }

    @Test func anIPv6Slash64IsOneAddress() {
        let first = ClientAddressGroup(text: "2001:db8:1:2::1")
        #expect(first == ClientAddressGroup(text: "2001:db8:1:2:ffff:ffff:ffff:ffff"))
        #expect(first != ClientAddressGroup(text: "2001:db8:1:3::1"))
        #expect(first.description == "2001:db8:1:2::/64")
        #expect(ClientAddressGroup(text: "::ffff:192.0.2.7") == ClientAddressGroup(text: "192.0.2.7"), "an IPv4-mapped peer is its IPv4 address")
        var limits = AdmissionControl.Limits()
        limits.startupsPerAddress = 1
        var control = AdmissionControl(limits: limits)
        #expect(control.accept(from: first, roll: 99) == .admit)
        #expect(control.accept(from: ClientAddressGroup(text: "2001:db8:1:2::99"), roll: 99) == .refuse(.perAddress))
    }

    @Test func startupsBeyondFullAreRefusedAndBetweenStartAndFullDroppedByTheDice() throws {
        var limits = AdmissionControl.Limits()
        limits.startups = try StartupsPolicy(start: 2, rate: 50, full: 4)
        var control = AdmissionControl(limits: limits)
        let address = { (index: Int) in ClientAddressGroup(text: "192.0.2.\(index)") }
        #expect(control.accept(from: address(1), roll: 0) == .admit)
        #expect(control.accept(from: address(2), roll: 0) == .admit)
        // At 2 of start 2: 50% dropped.
        #expect(control.accept(from: address(3), roll: 49) == .refuse(.earlyDrop))
        #expect(control.accept(from: address(3), roll: 50) == .admit)
        // At 3: 75%.
        #expect(control.accept(from: address(4), roll: 74) == .refuse(.earlyDrop))
        #expect(control.accept(from: address(4), roll: 75) == .admit)
        #expect(control.accept(from: address(5), roll: 99) == .refuse(.startupsFull))
    }

    @Test func promotionMovesAStartupToTheTunnelsWhileThereIsRoom() {
        var limits = AdmissionControl.Limits()
        limits.tunnels = 1
        var control = AdmissionControl(limits: limits)
        #expect(control.accept(from: Self.attacker, roll: 99) == .admit)
        #expect(control.accept(from: Self.attacker, roll: 99) == .admit, "idle connections do not take tunnel places")
        #expect(control.promote(from: Self.attacker) == .admit)
        #expect(control.promote(from: Self.attacker) == .refuse(.tunnelsFull))
        #expect(control.unauthenticated == 0 && control.tunnels == 1)
        #expect(control.accept(from: Self.attacker, roll: 99) == .refuse(.tunnelsFull), "no point starting what cannot become a tunnel")
        control.tunnelClosed()
        #expect(control.accept(from: Self.attacker, roll: 99) == .admit)
    }

    @Test func refusalsAreLoggedOncePerIntervalWithTheirCounts() {
        var throttle = LogRateLimiter<AdmissionRefusal>(interval: .seconds(10))
        let start = NIODeadline.now()
        #expect(throttle.admit(.perAddress, now: start) == [.perAddress: 1], "the first is told at once")
        for second in 1..<10 {
            #expect(throttle.admit(.perAddress, now: start + .seconds(Int64(second))) == nil)
        }
        #expect(throttle.admit(.earlyDrop, now: start + .milliseconds(9_999)) == nil)
        #expect(throttle.admit(.perAddress, now: start + .seconds(10)) == [.perAddress: 10, .earlyDrop: 1])
    }

    @Test func aFloodOfRefusalsWritesOneLineAndCountsEveryOne() {
        let (logger, lines) = CapturingLogHandler.logger()
        var limits = AdmissionControl.Limits()
        limits.startupsPerAddress = 1
        let admission = ConnectionAdmission(limits: limits, logInterval: .seconds(3600), metrics: nil, logger: logger)
        let attacker = try? SocketAddress(ipAddress: "192.0.2.66", port: 1)
        #expect(admission.accept(from: attacker) != nil)
        for _ in 0..<10_000 {
            #expect(admission.accept(from: attacker) == nil)
        }
        #expect(lines.all.count == 1, "\(lines.all.map(\.message))")
        #expect(lines.all.first?.metadata["per_address"] == "1")
    }

    @Test func aHandshakeHasLessTimeThanAFirstMessage() {
        let settings = TunnelServer.Settings()
        #expect(settings.tlsHandshakeTimeout < settings.firstMessageTimeout)
    }
}
