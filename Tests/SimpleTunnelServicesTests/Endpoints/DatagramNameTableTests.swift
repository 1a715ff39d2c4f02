import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("UDP flow name table")
struct DatagramNameTableTests {
    let name = DatagramNameTable.Name(TunnelEndpoint(host: "Echo.Test", port: 53))
    let address: SocketAddress
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    init() throws {
        address = try SocketAddress(ipAddress: "127.0.0.1", port: 53)
    }

    func datagram(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test func oneLookupPerNameAndTheWaitingDatagramsComeBackInOrder() {
        var table = DatagramNameTable()
        #expect(table.admit(datagram("a"), to: name, now: start) == .lookUp)
        #expect(table.admit(datagram("b"), to: name, now: start) == .wait)
        // Names differ by case only: the same name.
        let shouted = DatagramNameTable.Name(TunnelEndpoint(host: "ECHO.TEST", port: 53))
        #expect(table.admit(datagram("c"), to: shouted, now: start) == .wait)
        #expect(table.lookupSucceeded(name, address: address, now: start) == [datagram("a"), datagram("b"), datagram("c")])
        #expect(table.lookupCount == 0)
    }

    @Test func anAnswerIsReusedUntilItExpires() {
        var table = DatagramNameTable()
        _ = table.admit(datagram("a"), to: name, now: start)
        _ = table.lookupSucceeded(name, address: address, now: start)
        #expect(table.admit(datagram("b"), to: name, now: start + .seconds(29)) == .send(address))
        #expect(table.admit(datagram("c"), to: name, now: start + .seconds(30)) == .lookUp)
    }

    @Test func waitingDatagramsAreBoundedAndTheOverflowReportedOncePerLookup() {
        var limits = DatagramNameTable.Limits()
        limits.maximumWaiting = 3
        var table = DatagramNameTable(limits: limits)
        #expect(table.admit(datagram("1"), to: name, now: start) == .lookUp)
        #expect(table.admit(datagram("2"), to: name, now: start) == .wait)
        #expect(table.admit(datagram("3"), to: name, now: start) == .wait)
        guard case .drop = table.admit(datagram("4"), to: name, now: start) else {
            Issue.record("the fourth datagram was not dropped")
            return
        }
        #expect(table.admit(datagram("5"), to: name, now: start) == .dropUnreported)
        // Another name cannot wait either while the bound is reached.
        let other = DatagramNameTable.Name(TunnelEndpoint(host: "other.test", port: 53))
        guard case .drop = table.admit(datagram("6"), to: other, now: start) else {
            Issue.record("a datagram for another name was not dropped")
            return
        }
        #expect(table.lookupFailed(name) == 3)
        // Room again once the lookup has ended.
        #expect(table.admit(datagram("7"), to: other, now: start) == .lookUp)
    }

    @Test func lookupsAtTheSameTimeAreBounded() {
        var limits = DatagramNameTable.Limits()
        limits.maximumLookups = 2
        var table = DatagramNameTable(limits: limits)
        let names = (1...3).map { DatagramNameTable.Name(TunnelEndpoint(host: "host\($0).test", port: 53)) }
        #expect(table.admit(datagram("a"), to: names[0], now: start) == .lookUp)
        #expect(table.admit(datagram("b"), to: names[1], now: start) == .lookUp)
        guard case .drop = table.admit(datagram("c"), to: names[2], now: start) else {
            Issue.record("a third lookup was allowed")
            return
        }
        _ = table.lookupSucceeded(names[0], address: address, now: start)
        #expect(table.admit(datagram("d"), to: names[2], now: start) == .lookUp)
    }

    @Test func answersAreBoundedAndTheSoonestToExpireMakesRoom() {
        var limits = DatagramNameTable.Limits()
        limits.maximumAnswers = 2
        var table = DatagramNameTable(limits: limits)
        let names = (1...3).map { DatagramNameTable.Name(TunnelEndpoint(host: "host\($0).test", port: 53)) }
        for (offset, name) in names.enumerated() {
            _ = table.admit(datagram("x"), to: name, now: start)
            _ = table.lookupSucceeded(name, address: address, now: start + .seconds(Int64(offset)))
        }
        #expect(table.answerCount == 2)
        #expect(table.admit(datagram("y"), to: names[0], now: start + .seconds(3)) == .lookUp)
        #expect(table.admit(datagram("y"), to: names[2], now: start + .seconds(3)) == .send(address))
    }

    @Test func expiredAnswersArePrunedBeforeAnythingIsEvicted() {
        var limits = DatagramNameTable.Limits()
        limits.maximumAnswers = 2
        var table = DatagramNameTable(limits: limits)
        let names = (1...3).map { DatagramNameTable.Name(TunnelEndpoint(host: "host\($0).test", port: 53)) }
        _ = table.admit(datagram("x"), to: names[0], now: start)
        _ = table.lookupSucceeded(names[0], address: address, now: start)
        _ = table.admit(datagram("x"), to: names[1], now: start + .seconds(20))
        _ = table.lookupSucceeded(names[1], address: address, now: start + .seconds(20))
        // At 31 s the first answer has expired; it goes, the second stays.
        _ = table.admit(datagram("x"), to: names[2], now: start + .seconds(31))
        _ = table.lookupSucceeded(names[2], address: address, now: start + .seconds(31))
        #expect(table.answerCount == 2)
        #expect(table.admit(datagram("y"), to: names[1], now: start + .seconds(31)) == .send(address))
    }
}
