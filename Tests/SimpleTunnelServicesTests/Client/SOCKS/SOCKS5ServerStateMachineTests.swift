import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("SOCKS5 server state machine")
struct SOCKS5ServerStateMachineTests {
    typealias Bytes = SOCKS5ClientBytes

    static let acceptedGreeting = SOCKS5ServerStateMachine.Action.sendBytes(Bytes.methodSelectedNoAuthentication)

    // MARK: Requests and address types

    @Test(arguments: ByteStreamCut.allCases)
    func connectToIPv4(cut: ByteStreamCut) {
        var machine = SOCKS5ServerStateMachine()
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectIPv4([192, 0, 2, 1], port: 443)), cut)
        #expect(actions == [Self.acceptedGreeting, .request(.connect(TunnelEndpoint(host: "192.0.2.1", port: 443)))])
        #expect(machine.phase == .awaitingReply)
    }

    @Test(arguments: ByteStreamCut.allCases)
    func connectToIPv6InPlainLowerCaseForm(cut: ByteStreamCut) {
        var machine = SOCKS5ServerStateMachine()
        let address: [UInt8] = [0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0A, 0xBC]
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectIPv6(address, port: 8080)), cut)
        #expect(actions == [Self.acceptedGreeting, .request(.connect(TunnelEndpoint(host: "2001:db8::abc", port: 8080)))])
    }

    @Test func connectToIPv4MappedIPv6GivesTheIPv4Host() {
        var machine = SOCKS5ServerStateMachine()
        let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 198, 51, 100, 7]
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectIPv6(mapped, port: 80)), .allAtOnce)
        #expect(actions.last == .request(.connect(TunnelEndpoint(host: "198.51.100.7", port: 80))))
    }

    @Test(arguments: ByteStreamCut.allCases)
    func connectToDomainName(cut: ByteStreamCut) {
        var machine = SOCKS5ServerStateMachine()
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectDomain("example.com", port: 80)), cut)
        #expect(actions == [Self.acceptedGreeting, .request(.connect(TunnelEndpoint(host: "example.com", port: 80)))])
    }

    @Test(arguments: [ByteStreamCut.allAtOnce, .byteByByte])
    func connectToADomainNameOf253Bytes(cut: ByteStreamCut) {
        let name = String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63) + "."
            + String(repeating: "c", count: 63) + "." + String(repeating: "d", count: 61)
        #expect(name.utf8.count == 253)
        var machine = SOCKS5ServerStateMachine()
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectDomain(name, port: 443)), cut)
        #expect(actions == [Self.acceptedGreeting, .request(.connect(TunnelEndpoint(host: name, port: 443)))])
    }

    /// SOCKS can carry 255 bytes, the tunnel's `host` 253 (a DNS name's limit): refused here, not by the server.
    @Test func aDomainNameLongerThanTheTunnelCarriesIsRefused() {
        let name = String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63) + "."
            + String(repeating: "c", count: 63) + "." + String(repeating: "d", count: 63)
        var machine = SOCKS5ServerStateMachine()
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectDomain(name, port: 443)), .allAtOnce)
        #expect(actions.last == .fail(.malformedDomainName, replyBytes: Bytes.reply(0x01)))
    }

    @Test func aDomainNameThatIsAnIPv6LiteralIsNormalised() {
        var machine = SOCKS5ServerStateMachine()
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectDomain("2001:DB8:0:0::1", port: 80)), .allAtOnce)
        #expect(actions.last == .request(.connect(TunnelEndpoint(host: "2001:db8::1", port: 80))))
    }

    @Test func choosesNoAuthenticationAmongSeveralMethods() {
        var machine = SOCKS5ServerStateMachine()
        let actions = machine.receive(Bytes.greeting(methods: [0x02, 0x01, 0x00, 0x80]), .allAtOnce)
        #expect(actions == [Self.acceptedGreeting])
        #expect(machine.phase == .handshaking)
    }

    @Test func acceptsAGreetingOffering255Methods() {
        var machine = SOCKS5ServerStateMachine()
        let methods = (1...255).map { UInt8($0 % 256) }.map { $0 == 255 ? 0 : $0 }
        #expect(machine.receive(Bytes.greeting(methods: methods), .byteByByte) == [Self.acceptedGreeting])
    }

    @Test(arguments: ByteStreamCut.allCases)
    func udpAssociateWithAllZerosHasNoHint(cut: ByteStreamCut) {
        var machine = SOCKS5ServerStateMachine()
        let request = Bytes.request(command: 0x03, addressType: 0x01, address: [0, 0, 0, 0], port: 0)
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, request), cut)
        #expect(actions == [Self.acceptedGreeting, .request(.udpAssociate(clientHint: nil))])
    }

    @Test func udpAssociateWithIPv6ZerosHasNoHint() {
        var machine = SOCKS5ServerStateMachine()
        let request = Bytes.request(command: 0x03, addressType: 0x04, address: [UInt8](repeating: 0, count: 16), port: 0)
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, request), .allAtOnce)
        #expect(actions.last == .request(.udpAssociate(clientHint: nil)))
    }

    @Test func udpAssociateCarriesTheClientsHint() {
        var machine = SOCKS5ServerStateMachine()
        let request = Bytes.request(command: 0x03, addressType: 0x01, address: [10, 0, 0, 2], port: 5353)
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, request), .allAtOnce)
        #expect(actions.last == .request(.udpAssociate(clientHint: TunnelEndpoint(host: "10.0.0.2", port: 5353))))
    }

    @Test func udpAssociateWithOnlyAPortKeepsItAsAHint() {
        var machine = SOCKS5ServerStateMachine()
        let request = Bytes.request(command: 0x03, addressType: 0x01, address: [0, 0, 0, 0], port: 40000)
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, request), .allAtOnce)
        #expect(actions.last == .request(.udpAssociate(clientHint: TunnelEndpoint(host: "0.0.0.0", port: 40000))))
    }

    /// Any cut of the stream into reads gives the same decisions and the
    /// same leftover as reading it whole.
    @Test(arguments: [
        Bytes.connectIPv4([192, 0, 2, 1], port: 80),
        Bytes.connectDomain("example.com", port: 443),
        Bytes.connectIPv6([UInt8](repeating: 0xAB, count: 16), port: 22),
        Bytes.request(command: 0x03, addressType: 0x01, address: [0, 0, 0, 0], port: 0),
        Bytes.request(command: 0x02, addressType: 0x01, address: [0, 0, 0, 0], port: 0),
    ])
    func randomCutsDecideLikeOneRead(request: ByteBuffer) {
        let stream = Bytes.glued(Bytes.greeting(methods: [0x02, 0x00]), request, ByteBuffer(counter: 100))
        var whole = SOCKS5ServerStateMachine()
        let expected = whole.receiveBytes(stream)
        let expectedReply = whole.phase == .awaitingReply ? whole.reply(.succeeded(boundAddress: nil)) : nil
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var machine = SOCKS5ServerStateMachine()
            var remaining = stream
            var actions: [SOCKS5ServerStateMachine.Action] = []
            while remaining.readableBytes > 0 {
                let length = Int.random(in: 1...min(remaining.readableBytes, 12), using: &generator)
                if let chunk = remaining.readSlice(length: length) { actions += machine.receiveBytes(chunk) }
            }
            #expect(actions == expected)
            if expectedReply != nil {
                #expect(machine.reply(.succeeded(boundAddress: nil)) == expectedReply)
            }
        }
    }

    // MARK: Replies

    @Test(arguments: TunnelConnectionOpenResult.allCases)
    func mapsEveryTunnelOpenResultToItsReply(result: TunnelConnectionOpenResult) {
        let expected: [TunnelConnectionOpenResult: SOCKS5ReplyCode] = [
            .success: .succeeded, .invalidParameter: .generalFailure, .noSuchHost: .hostUnreachable,
            .refused: .connectionRefused, .timeout: .ttlExpired, .internalError: .generalFailure,
        ]
        #expect(SOCKS5ReplyCode(result) == expected[result])
        #expect(SOCKS5Outcome(result, boundAddress: nil).reply == expected[result])
    }

    @Test(arguments: SOCKS5ReplyCode.allCases)
    func writesEveryReplyCode(code: SOCKS5ReplyCode) {
        var machine = Self.machineAwaitingReply()
        let action = machine.reply(.failure(code))
        if code == .succeeded {
            #expect(action == .establish(replyBytes: Bytes.reply(0x00), leftover: nil, inputClosed: false))
            #expect(machine.phase == .established)
        } else {
            #expect(action == .rejectAndClose(replyBytes: Bytes.reply(code.rawValue)))
            #expect(machine.phase == .failed)
        }
    }

    @Test func replyCarriesAnIPv4BoundAddress() throws {
        var machine = Self.machineAwaitingReply()
        let bound = try SocketAddress(ipAddress: "127.0.0.1", port: 1080)
        let action = machine.reply(SOCKS5Outcome(reply: .succeeded, boundAddress: bound))
        #expect(action == .establish(replyBytes: ByteBuffer(hex: "05 00 00 01 7f000001 0438"), leftover: nil, inputClosed: false))
    }

    @Test func replyCarriesAnIPv6BoundAddress() throws {
        var machine = Self.machineAwaitingReply()
        let bound = try SocketAddress(ipAddress: "2001:db8::5", port: 53)
        let action = machine.reply(SOCKS5Outcome(reply: .succeeded, boundAddress: bound))
        let expected = ByteBuffer(hex: "05 00 00 04 20010db8000000000000000000000005 0035")
        #expect(action == .establish(replyBytes: expected, leftover: nil, inputClosed: false))
    }

    @Test func replyCarriesADomainBoundAddress() throws {
        var machine = Self.machineAwaitingReply()
        let outcome = try SOCKS5Outcome(reply: .succeeded, boundAddress: TunnelEndpoint(host: "relay.test", port: 1))
        #expect(outcome.boundAddress == TunnelEndpoint(host: "relay.test", port: 1))
        let expected = Bytes.glued(ByteBuffer(hex: "05 00 00 03 0a"), ByteBuffer(string: "relay.test"), ByteBuffer(hex: "0001"))
        #expect(machine.reply(outcome) == .establish(replyBytes: expected, leftover: nil, inputClosed: false))
    }

    @Test func aBoundAddressWithoutASOCKSFormIsRefusedWhenBuilt() {
        let longName = String(repeating: "x", count: 256)
        #expect(throws: SOCKS5Error.hostNotEncodable(longName)) {
            try SOCKS5Outcome(reply: .succeeded, boundAddress: TunnelEndpoint(host: longName, port: 1))
        }
        #expect(throws: SOCKS5Error.portOutOfRange(70000)) {
            try SOCKS5Outcome(reply: .succeeded, boundAddress: TunnelEndpoint(host: "192.0.2.1", port: 70000))
        }
    }

    // MARK: Data pipelined after the request

    @Test(arguments: ByteStreamCut.allCases)
    func keepsDataSentRightAfterTheRequest(cut: ByteStreamCut) {
        var machine = SOCKS5ServerStateMachine()
        let early = ByteBuffer(string: "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        let stream = Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectDomain("example.com", port: 80), early)
        let actions = machine.receive(stream, cut)
        #expect(actions == [Self.acceptedGreeting, .request(.connect(TunnelEndpoint(host: "example.com", port: 80)))])
        #expect(machine.reply(.succeeded(boundAddress: nil)) == .establish(replyBytes: Bytes.reply(0), leftover: early, inputClosed: false))
    }

    @Test func keepsTheEndOfInputThatFollowsPipelinedData() {
        var machine = Self.machineAwaitingReply()
        #expect(machine.receiveBytes(ByteBuffer(string: "hello")) == [])
        #expect(machine.receiveEndOfInput() == nil)
        #expect(machine.reply(.succeeded(boundAddress: nil)) == .establish(replyBytes: Bytes.reply(0), leftover: ByteBuffer(string: "hello"), inputClosed: true))
    }

    @Test func failureReplyDropsPipelinedData() {
        var machine = Self.machineAwaitingReply()
        _ = machine.receiveBytes(ByteBuffer(string: "hello"))
        #expect(machine.reply(.failure(.hostUnreachable)) == .rejectAndClose(replyBytes: Bytes.reply(0x04)))
    }

    // MARK: Protocol faults

    @Test(arguments: [UInt8(0x04), UInt8(ascii: "G"), UInt8(ascii: "C"), 0x16, 0x00])
    func refusesAGreetingOfAnotherVersionWithoutReply(version: UInt8) {
        var machine = SOCKS5ServerStateMachine()
        #expect(machine.receiveBytes(ByteBuffer(bytes: [version])) == [.fail(.unsupportedVersion(version), replyBytes: nil)])
        #expect(machine.phase == .failed)
        #expect(machine.receiveBytes(ByteBuffer(bytes: [0x05, 0x01, 0x00])) == [])
    }

    @Test func refusesARequestOfAnotherVersionWithoutReply() {
        var machine = SOCKS5ServerStateMachine()
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, ByteBuffer(bytes: [0x04, 0x01])), .byteByByte)
        #expect(actions == [Self.acceptedGreeting, .fail(.unsupportedVersion(0x04), replyBytes: nil)])
    }

    @Test(arguments: ByteStreamCut.allCases)
    func answersNoAcceptableMethodWhenOnlyAuthenticationIsOffered(cut: ByteStreamCut) {
        var machine = SOCKS5ServerStateMachine()
        let actions = machine.receive(Bytes.greeting(methods: [0x02]), cut)
        #expect(actions == [.fail(.noAcceptableAuthenticationMethod(offered: [0x02]), replyBytes: ByteBuffer(bytes: [0x05, 0xFF]))])
        #expect(machine.phase == .failed)
    }

    @Test func refusesAGreetingWithoutMethods() {
        var machine = SOCKS5ServerStateMachine()
        #expect(machine.receiveBytes(ByteBuffer(bytes: [0x05, 0x00])) == [.fail(.noAuthenticationMethodsOffered, replyBytes: nil)])
    }

    @Test(arguments: ByteStreamCut.allCases)
    func refusesBindWithCommandNotSupported(cut: ByteStreamCut) {
        var machine = SOCKS5ServerStateMachine()
        let bind = Bytes.request(command: 0x02, addressType: 0x01, address: [192, 0, 2, 1], port: 21)
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, bind), cut)
        #expect(actions == [Self.acceptedGreeting, .fail(.unsupportedCommand(0x02), replyBytes: Bytes.reply(0x07))])
        #expect(machine.phase == .failed)
    }

    @Test(arguments: [UInt8(0x00), 0x04, 0x09, 0xFF])
    func refusesUnknownCommandsWithCommandNotSupported(command: UInt8) {
        var machine = SOCKS5ServerStateMachine()
        let request = Bytes.request(command: command, addressType: 0x01, address: [192, 0, 2, 1], port: 21)
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, request), .allAtOnce)
        #expect(actions.last == .fail(.unsupportedCommand(command), replyBytes: Bytes.reply(0x07)))
    }

    @Test(arguments: [UInt8(0x00), 0x02, 0x05, 0xFF])
    func refusesUnknownAddressTypesWithAddressTypeNotSupported(addressType: UInt8) {
        var machine = SOCKS5ServerStateMachine()
        let request = Bytes.glued(ByteBuffer(bytes: [0x05, 0x01, 0x00, addressType]), ByteBuffer(hex: "c0000201 0050"))
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, request), .byteByByte)
        #expect(actions == [Self.acceptedGreeting, .fail(.unsupportedAddressType(addressType), replyBytes: Bytes.reply(0x08))])
    }

    @Test func refusesANonZeroReservedByte() {
        var machine = SOCKS5ServerStateMachine()
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, ByteBuffer(hex: "05 01 01 01 c0000201 0050")), .allAtOnce)
        #expect(actions.last == .fail(.nonZeroReservedByte(0x01), replyBytes: Bytes.reply(0x01)))
    }

    @Test func refusesAnEmptyDomainName() {
        var machine = SOCKS5ServerStateMachine()
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, ByteBuffer(hex: "05 01 00 03 00 0050")), .allAtOnce)
        #expect(actions.last == .fail(.emptyDomainName, replyBytes: Bytes.reply(0x01)))
    }

    @Test(arguments: [[UInt8(ascii: "a"), 0x00, UInt8(ascii: "b")], Array("a b".utf8), [0xC3, 0x28], [0x0A], Array("127.0.0.1\u{0}.example.com".utf8), Array("a..b".utf8)])
    func refusesDomainNamesThatAreNotPrintableUTF8(name: [UInt8]) {
        var machine = SOCKS5ServerStateMachine()
        let request = Bytes.request(addressType: 0x03, address: name, port: 80)
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, request), .allAtOnce)
        #expect(actions.last == .fail(.malformedDomainName, replyBytes: Bytes.reply(0x01)))
    }

    @Test func cutsOffGarbageAtItsFirstByte() {
        var machine = SOCKS5ServerStateMachine()
        let garbage = ByteBuffer(repeating: UInt8(ascii: "G"), count: 64 * 1024)
        #expect(machine.receiveBytes(garbage) == [.fail(.unsupportedVersion(UInt8(ascii: "G")), replyBytes: nil)])
        #expect(machine.receiveBytes(garbage) == [])
    }

    @Test func cutsOffTooMuchDataGluedToTheRequest() {
        var machine = SOCKS5ServerStateMachine(maximumBufferedBytes: 1024)
        let flood = ByteBuffer(repeating: 0x41, count: 1025)
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectIPv4([192, 0, 2, 1], port: 80), flood), .allAtOnce)
        #expect(actions == [Self.acceptedGreeting, .fail(.tooMuchDataBeforeReply(limit: 1024), replyBytes: Bytes.reply(0x01))])
        #expect(machine.reply(.succeeded(boundAddress: nil)) == .ignore)
    }

    @Test func cutsOffTooMuchDataWhileTheRequestIsPending() {
        var machine = Self.machineAwaitingReply(maximumBufferedBytes: 1024)
        #expect(machine.receiveBytes(ByteBuffer(repeating: 0x41, count: 1000)) == [])
        #expect(machine.receiveBytes(ByteBuffer(repeating: 0x41, count: 24)) == [])
        #expect(machine.receiveBytes(ByteBuffer(bytes: [0x41])) == [.fail(.tooMuchDataBeforeReply(limit: 1024), replyBytes: Bytes.reply(0x01))])
        #expect(machine.phase == .failed)
    }

    @Test func endOfInputDuringTheHandshakeFails() {
        var machine = SOCKS5ServerStateMachine()
        _ = machine.receiveBytes(ByteBuffer(bytes: [0x05, 0x01]))
        #expect(machine.receiveEndOfInput() == .fail(.endOfInputDuringHandshake, replyBytes: nil))
    }

    @Test func handshakeTimeoutFailsOnlyBeforeTheRequest() {
        var slow = SOCKS5ServerStateMachine()
        #expect(slow.handshakeTimedOut(after: .seconds(10)) == .fail(.handshakeTimedOut(after: .seconds(10)), replyBytes: nil))
        var pending = Self.machineAwaitingReply()
        #expect(pending.handshakeTimedOut(after: .seconds(10)) == nil)
        #expect(pending.phase == .awaitingReply)
    }

    @Test func anOutcomeAfterTheConnectionClosedIsIgnored() {
        var machine = Self.machineAwaitingReply()
        machine.connectionClosed()
        #expect(machine.reply(.succeeded(boundAddress: nil)) == .ignore)
    }

    // MARK: Messages

    @Test func errorsTellTheUserWhatToChange() {
        #expect(
            SOCKS5Error.noAcceptableAuthenticationMethod(offered: [0x02]).description
                == "SOCKS client asked for authentication methods [0x02] but this proxy only offers 'no authentication'; "
                + "configure the client without a username"
        )
        #expect(SOCKS5Error.unsupportedVersion(0x04).description.contains("configure the client for SOCKS version 5"))
        #expect(SOCKS5Error.unsupportedVersion(UInt8(ascii: "G")).description.contains("HTTP proxy"))
        #expect(SOCKS5Error.unsupportedCommand(0x02).description.contains("BIND (0x02)"))
        #expect(SOCKS5Error.handshakeTimedOut(after: .seconds(30)).description.contains("within 30 s"))
        #expect(SOCKS5Error.fragmentedDatagram(fragment: 1).kind == "socks.fragmentedDatagram")
    }

    static func machineAwaitingReply(maximumBufferedBytes: Int = SOCKS5ServerStateMachine.defaultMaximumBufferedBytes) -> SOCKS5ServerStateMachine {
        var machine = SOCKS5ServerStateMachine(maximumBufferedBytes: maximumBufferedBytes)
        let actions = machine.receive(Bytes.glued(Bytes.noAuthenticationGreeting, Bytes.connectIPv4([192, 0, 2, 1], port: 80)), .allAtOnce)
        precondition(actions.count == 2 && machine.phase == .awaitingReply)
        return machine
    }
}
