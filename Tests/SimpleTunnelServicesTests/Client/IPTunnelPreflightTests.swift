import Testing
@testable import SimpleTunnelServices

/// `tunnel-client ip` checks what it needs before connecting, and each
/// failure gives its one reason.
@Suite("Client: IP tunnel preflight")
struct IPTunnelPreflightTests {
    static let able = IPTunnelPreflight.Facts(hasNetAdmin: true, device: .usable)

    @Test func aUsableSetupPasses() {
        #expect(IPTunnelPreflight.problem(deviceName: "stun%d", facts: Self.able) == nil)
        #expect(IPTunnelPreflight.problem(deviceName: "stun1", facts: Self.able) == nil)
        #expect(IPTunnelPreflight.problem(deviceName: "abcdefghijklmn%d", facts: Self.able) != nil)
        #expect(IPTunnelPreflight.problem(deviceName: "abcdefghijklm%d", facts: Self.able) == nil)
    }

    @Test func eachBadNameGetsItsOwnReasonOnly() throws {
        let long = try #require(IPTunnelPreflight.problem(deviceName: "a-name-far-too-long", facts: Self.able)).description
        #expect(long.contains("at most 15") && !long.contains("%d"), "\(long)")
        let twoPatterns = try #require(IPTunnelPreflight.problem(deviceName: "st%d%d", facts: Self.able)).description
        #expect(twoPatterns.contains("one %d") && !twoPatterns.contains("15"), "\(twoPatterns)")
        let otherPercent = try #require(IPTunnelPreflight.problem(deviceName: "st%s", facts: Self.able)).description
        #expect(otherPercent.contains("one %d"), "\(otherPercent)")
        for name in ["st/1", "st 1", "st:1", ".."] {
            let text = try #require(IPTunnelPreflight.problem(deviceName: name, facts: Self.able)).description
            #expect(text.contains("cannot contain") && !text.contains("%d") && !text.contains("15"), "\(name): \(text)")
        }
        #expect(IPTunnelPreflight.problem(deviceName: "", facts: Self.able) != nil)
    }

    @Test func withoutNetAdminTheOneReasonIsPrivilege() throws {
        let text = try #require(
            IPTunnelPreflight.problem(deviceName: "stun%d", facts: .init(hasNetAdmin: false, device: .usable))).description
        #expect(text.contains("root or CAP_NET_ADMIN") && text.contains("sudo"), "\(text)")
        #expect(!text.contains("modprobe") && !text.contains("%d"), "\(text)")
    }

    @Test func aMissingDeviceSaysModprobe() throws {
        let text = try #require(
            IPTunnelPreflight.problem(deviceName: "stun%d", facts: .init(hasNetAdmin: true, device: .missing))).description
        #expect(text.contains("modprobe tun") && !text.contains("CAP_NET_ADMIN"), "\(text)")
    }

    @Test func netAdminIsReadFromTheEffectiveCapabilities() {
        #expect(IPTunnelPreflight.hasNetAdmin(procStatus: "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n"))
        #expect(IPTunnelPreflight.hasNetAdmin(procStatus: "CapEff:\t0000000000001000\n"))
        #expect(!IPTunnelPreflight.hasNetAdmin(procStatus: "CapPrm:\t0000000000001000\nCapEff:\t0000000000000000\n"))
        #expect(!IPTunnelPreflight.hasNetAdmin(procStatus: "nothing here"))
    }
}
