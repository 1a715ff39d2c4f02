import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Tunnel messages", .timeLimit(.minutes(2)))
struct TunnelMessageTests {
    static let configuration: [String: PropertyListValue] = [
        "IPv4": .dictionary(["Address": .string("192.168.2.2"), "Netmask": .string("255.255.255.255")]),
        "DNS": .dictionary(["Servers": .array([.string("10.0.0.53")])]),
    ]

    static let everyMessage: [TunnelMessage] = [
        .data(identifier: 1, payload: ByteBuffer(string: "hello")),
        .data(identifier: -7, payload: ByteBuffer(counter: 16_384)),
        .data(identifier: 3, payload: ByteBuffer(), endpoint: TunnelEndpoint(host: "::1", port: 53)),
        .suspend(identifier: Int64.max),
        .resume(identifier: Int64.min),
        .close(identifier: 9, direction: .none),
        .close(identifier: 9, direction: .read),
        .close(identifier: 9, direction: .write),
        .close(identifier: 9, direction: .all),
        .dns(identifier: 4, packet: ByteBuffer(hex: "abcd0100"), source: nil),
        .dns(identifier: 4, packet: ByteBuffer(hex: "abcd8180"), source: "127.0.0.53:53"),
        // A name travels as its IDNA A-label; text beyond ASCII (UTF-16 on the wire) is in the login and password.
        .open(identifier: 5, request: .tcp(TunnelEndpoint(host: "xn--bcher-kva.example", port: 443))),
        .open(identifier: 6, request: .udp),
        .open(identifier: 7, request: .plainIP),
        .open(identifier: 8, request: .ip(offersSuperPackets: true)),
        .openResult(identifier: 7, result: .success, configuration: configuration),
        .openResult(identifier: 5, result: .noSuchHost),
        .packets(identifier: 7, packets: [
            TunnelPacket(bytes: ByteBuffer(hex: "4500"), protocolNumber: 2),
            TunnelPacket(bytes: ByteBuffer(hex: "6000"), protocolNumber: 30),
            TunnelPacket(bytes: ByteBuffer(hex: "4500"), protocolNumber: 99),
        ]),
        // Super-packets (PROTOCOL.md B8): `segment-sizes` beside them, 0 for an ordinary packet.
        .packets(identifier: 8, packets: [
            TunnelPacket(bytes: ByteBuffer(hex: "4500"), protocolNumber: 2, segmentSize: 1348),
            TunnelPacket(bytes: ByteBuffer(hex: "6000"), protocolNumber: 30),
            TunnelPacket(bytes: ByteBuffer(hex: "6000"), protocolNumber: 30, segmentSize: 65_535),
        ]),
        .fetchConfiguration(identifier: 0),
        .fetchConfiguration(identifier: 0, configuration: configuration),
        .authenticate(login: "jürgen", password: "correct horse 🐎"),
        // B2: a client that takes result 4 as "try again later" says so.
        .authenticate(login: "jürgen", password: "correct horse 🐎", offersRetryLater: true),
        .authenticateResult(.refused),
        .authenticateResult(.timeout),
    ]

    @Test func everyMessageSurvivesAFrameRoundTrip() throws {
        for message in Self.everyMessage {
            var frame = ByteBuffer()
            try TunnelFrame.encode(message, into: &frame)
            #expect(frame.getInteger(at: 0, endianness: .little, as: UInt32.self) == UInt32(frame.readableBytes))
            let payload = try #require(try TunnelFrameDecoder.nextPayload(from: &frame))
            #expect(try TunnelFrame.decodeMessage(payload: payload) == message)
            #expect(frame.readableBytes == 0)
        }
    }

    @Test func coreFoundationAndPlistlibReadEveryMessage() async throws {
        for message in Self.everyMessage {
            var payload = ByteBuffer()
            BinaryPropertyListWriter.writeDictionary(message.propertyListEntries, into: &payload)
            #expect(try ExternalPropertyListReaders.roundTripThroughCoreFoundation(payload) == message.propertyList)
            #expect(try await ExternalPropertyListReaders.roundTripThroughPlistlib(payload) == message.propertyList)
        }
    }

    /// Apple's client sends an integer (ClientAppProxyConnection.swift: `Int(…port)!`) and
    /// Apple's server reads only a number (ServerTunnel.swift: `as? NSNumber`).
    @Test func tcpOpenSendsPortAsAnIntegerLikeApplesClient() throws {
        let message = TunnelMessage.open(identifier: 1, request: .tcp(TunnelEndpoint(host: "example.com", port: 443)))
        let entries = message.propertyList.dictionaryValue
        #expect(entries?["port"] == .integer(443))
        // The fast writer gives the same bytes as the general one.
        var frame = ByteBuffer()
        try TunnelFrame.encode(message, into: &frame)
        let decoded = try BinaryPropertyListReader.read(frame.getSlice(at: 4, length: frame.readableBytes - 4) ?? ByteBuffer())
        #expect(decoded.dictionaryValue?["port"] == .integer(443))
        #expect(entries?["tunnel-type"] == .integer(0))
        #expect(entries?["app-proxy-flow-type"] == .integer(1))
    }

    @Test func udpDataSendsPortAsAnInteger() {
        let message = TunnelMessage.data(identifier: 1, payload: ByteBuffer(), endpoint: TunnelEndpoint(host: "127.0.0.1", port: 5353))
        #expect(message.propertyList.dictionaryValue?["port"] == .integer(5353))
    }

    @Test func acceptsPortAsIntegerOrString() throws {
        for port: PropertyListValue in [.integer(443), .string("443"), .string("0443")] {
            let message = try TunnelMessage(propertyList: .dictionary([
                "identifier": 1, "command": 6, "tunnel-type": 0, "app-proxy-flow-type": 1,
                "host": .string("example.com"), "port": port,
            ]))
            #expect(message == .open(identifier: 1, request: .tcp(TunnelEndpoint(host: "example.com", port: 443))))
        }
    }

    @Test func missingCloseTypeMeansAll() throws {
        let message = try TunnelMessage(propertyList: .dictionary(["identifier": 3, "command": 4]))
        #expect(message == .close(identifier: 3, direction: .all))
    }

    @Test func ipVersionComesFromThePacketNotTheProtocolNumber() {
        let v6 = TunnelPacket(bytes: ByteBuffer(hex: "60000000"), protocolNumber: 2)
        #expect(v6.ipVersion == .v6)
        #expect(TunnelPacket(bytes: ByteBuffer(hex: "45000000")).protocolNumber == TunnelPacket.ProtocolNumber.ipv4)
        #expect(TunnelPacket(bytes: ByteBuffer(hex: "60000000")).protocolNumber == TunnelPacket.ProtocolNumber.ipv6)
        #expect(TunnelPacket(bytes: ByteBuffer(hex: "00"), protocolNumber: 2).ipVersion == nil)
    }

    @Test func refusesAFrameTooLargeToSend() {
        var buffer = ByteBuffer()
        let message = TunnelMessage.data(identifier: 1, payload: ByteBuffer(counter: TunnelWireLimits.maximumFrameLength))
        #expect(throws: TunnelFrameError.self) { try TunnelFrame.encode(message, into: &buffer) }
        #expect(buffer.readableBytes == 0)
    }

    // MARK: Rejections and what they lead to

    static let rejections: [(PropertyListValue, TunnelMessageDecodingError.Kind, TunnelMessageDisposition)] = [
        (.array([]), .notADictionary, .closeTunnel),
        (.dictionary(["identifier": 1]), .missingCommand, .closeTunnel),
        (.dictionary(["identifier": 1, "command": .boolean(true)]), .commandNotInteger, .closeTunnel),
        (.dictionary(["identifier": 1, "command": .string("1")]), .commandNotInteger, .closeTunnel),
        (.dictionary(["identifier": 1, "command": 12]), .unknownCommand, .ignore),
        (.dictionary(["identifier": 1, "command": .integer(Int128(1) << 64)]), .unknownCommand, .ignore),
        (.dictionary(["identifier": 1, "command": -1]), .unknownCommand, .ignore),
        (.dictionary(["command": 2]), .missingIdentifier, .drop),
        (.dictionary(["command": 2, "identifier": .real(1)]), .identifierNotInteger, .drop),
        (.dictionary(["command": 2, "identifier": .integer(Int128(1) << 63)]), .identifierOutOfRange, .drop),
        (.dictionary(["command": 1, "identifier": 1]), .missingKey, .drop),
        (.dictionary(["command": 1, "identifier": 1, "data": .string("x")]), .wrongType, .drop),
        (.dictionary(["command": 4, "identifier": 1, "close-type": 7]), .invalidValue, .drop),
        (.dictionary(["command": 6, "identifier": 2]), .missingKey, .openFailure(identifier: 2)),
        (.dictionary(["command": 6, "identifier": 2, "tunnel-type": 0, "app-proxy-flow-type": 1, "host": .string("h")]),
         .missingKey, .openFailure(identifier: 2)),
        (.dictionary(["command": 6, "identifier": 2, "tunnel-type": 0, "app-proxy-flow-type": 1, "host": .string("h"), "port": .string("+1")]),
         .invalidValue, .openFailure(identifier: 2)),
        (.dictionary(["command": 6, "identifier": 2, "tunnel-type": 0, "app-proxy-flow-type": 1, "host": .string(""), "port": 1]),
         .invalidValue, .openFailure(identifier: 2)),
        (.dictionary(["command": 6, "identifier": 2, "tunnel-type": 0, "app-proxy-flow-type": 1, "host": 5, "port": 1]),
         .wrongType, .openFailure(identifier: 2)),
        (.dictionary(["command": 6, "identifier": 0, "tunnel-type": 1]), .invalidValue, .openFailure(identifier: 0)),
        (.dictionary(["command": 8, "identifier": 2, "packets": .array([.data(ByteBuffer())]), "protocols": .array([])]),
         .invalidValue, .drop),
    ]

    @Test func rejectsMalformedMessagesWithTheRightDisposition() {
        for (propertyList, kind, disposition) in Self.rejections {
            do {
                let message = try TunnelMessage(propertyList: propertyList)
                Issue.record("decoded \(message) from \(propertyList), expected \(kind)")
            } catch {
                #expect(error.kind == kind, "\(propertyList)")
                #expect(error.disposition == disposition, "\(propertyList)")
            }
        }
    }

    @Test func errorsNameTheKeyAndTheProblem() {
        let propertyList: PropertyListValue = .dictionary(["command": 6, "identifier": 2, "tunnel-type": .string("0")])
        #expect(throws: TunnelMessageDecodingError(
            kind: .wrongType, command: .open, identifier: 2, key: "tunnel-type",
            detail: "`tunnel-type` is a string, expected integer"
        )) {
            try TunnelMessage(propertyList: propertyList)
        }
    }
}

extension PropertyListValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) {
        self = .integer(Int128(value))
    }
}
