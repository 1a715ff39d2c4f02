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
        let kind = table.kind(5)?.0
        #expect(kind == .stream)
        #expect(table.stream(5)?.kind == .tcp)
        #expect(table.ip(5) == nil)
        let removed = table.remove(5)
        #expect(removed != nil)
        let again = table.insert(.ip(.awaitingOpenResult(queueLimit: 4096)), for: 5)
        #expect(again, "a forgotten flow's identifier is free again")
        let kindAgain = table.kind(5)?.0
        #expect(kindAgain == .ip)
    }

    @Test func anEventChangesTheFlowInPlaceAndOnlyAFlowOfItsKind() throws {
        var table = FlowTable()
        table.insert(.stream(.awaitingOpenResult(.tcp, limits: limits, now: .now())), for: 1)
        table.insert(.ip(.awaitingOpenResult(queueLimit: 4096)), for: 2)
        let ranOnStream = table.runStream(1, after: nil) { $0.peerSuspended(true) }
        #expect(ranOnStream != nil)
        #expect(table.stream(1)?.peerSuspended == true, "the change stays in the table")
        let kindAfter = table.kind(1)?.0
        #expect(kindAfter == .stream, "nothing is left in the placeholder")
        let ipOnStream = table.runIP(1, after: nil) { $0.peerSuspended(true) }
        #expect(ipOnStream == nil, "a TCP flow runs no IP flow's event")
        let streamOnIP = table.runStream(2, after: nil) { $0.peerSuspended(true) }
        #expect(streamOnIP == nil, "an IP flow runs no TCP flow's event")
        #expect(table.ip(2)?.peerSuspended == false)
        let ranOnIP = table.runIP(2, after: nil) { $0.peerSuspended(true) }
        #expect(ranOnIP != nil)
        #expect(table.ip(2)?.peerSuspended == true)
    }

    /// Where a flow was found serves the steps after an event only while no
    /// flow entered or left the table: the dictionary moves entries then.
    @Test func whereAFlowWasFoundServesOnlyWhileNoFlowEntersOrLeaves() throws {
        var table = FlowTable()
        table.insert(.stream(.awaitingOpenResult(.tcp, limits: limits, now: .now())), for: 1)
        table.insert(.stream(.awaitingOpenResult(.udp, limits: limits, now: .now())), for: 2)
        let second = try #require(table.find(2))
        #expect(table.find(2, after: second)?.index == second.index)
        table.remove(1)
        for identifier in 3..<64 {
            table.insert(.ip(.awaitingOpenResult(queueLimit: 4096)), for: TunnelConnectionIdentifier(identifier))
        }
        let again = try #require(table.find(2, after: second))
        #expect(again.index == table.find(2)?.index, "after the table changed, the flow is looked up again")
        let ran = table.runStream(2, after: second) { $0.peerSuspended(true) }
        #expect(ran != nil)
        #expect(table.stream(2)?.peerSuspended == true, "the event reached the flow it names, not the old place")
        #expect(table.stream(1) == nil)
    }
}
