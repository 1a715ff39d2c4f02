import Testing
@testable import SimpleTunnelServices

/// The one table of a tunnel's flows: an identifier names one flow of one
/// kind, and an event changes that flow in place or, of the other kind, not at all.
@Suite("The flow table")
struct FlowTableTests {
    let limits = FlowState.Limits(earlyDataAllowance: 1024, queue: Watermark(high: 4096, low: 1024))

    @Test func anIdentifierNamesOneFlowOfOneKind() throws {
        var table = FlowTable()
        let first = table.insert(.stream(.awaitingOpenResult(.tcp, limits: limits, now: .now())), for: 5)
        let secondIP = table.insert(.ip(.awaitingOpenResult(queueLimit: 4096)), for: 5)
        let secondUDP = table.insert(.stream(.awaitingOpenResult(.udp, limits: limits, now: .now())), for: 5)
        #expect(first)
        #expect(!secondIP, "an identifier in use takes no second flow")
        #expect(!secondUDP)
        #expect(table.count == 1)
        let index = try #require(table.index(of: 5))
        #expect(table.kind(at: index) == .stream)
        #expect(table.stream(5)?.kind == .tcp)
        #expect(table.ip(5) == nil)
        let removed = table.remove(5)
        #expect(removed != nil)
        let again = table.insert(.ip(.awaitingOpenResult(queueLimit: 4096)), for: 5)
        #expect(again, "a forgotten flow's identifier is free again")
        #expect(table.kind(at: try #require(table.index(of: 5))) == .ip)
    }

    @Test func anEventChangesTheFlowInPlaceAndOnlyAFlowOfItsKind() throws {
        var table = FlowTable()
        table.insert(.stream(.awaitingOpenResult(.tcp, limits: limits, now: .now())), for: 1)
        table.insert(.ip(.awaitingOpenResult(queueLimit: 4096)), for: 2)
        let stream = try #require(table.index(of: 1))
        let ranOnStream = table.withStream(at: stream) { $0.peerSuspended(true) }
        #expect(ranOnStream != nil)
        #expect(table.stream(1)?.peerSuspended == true, "the change stays in the table")
        #expect(table.kind(at: stream) == .stream, "nothing is left in the placeholder")
        let ipOnStream = table.withIP(at: stream) { $0.peerSuspended(true) }
        #expect(ipOnStream == nil, "a TCP flow runs no IP flow's event")
        let ip = try #require(table.index(of: 2))
        let streamOnIP = table.withStream(at: ip) { $0.peerSuspended(true) }
        #expect(streamOnIP == nil, "an IP flow runs no TCP flow's event")
        #expect(table.ip(2)?.peerSuspended == false)
        let ranOnIP = table.withIP(at: ip) { $0.peerSuspended(true) }
        #expect(ranOnIP != nil)
        #expect(table.ip(2)?.peerSuspended == true)
    }
}
