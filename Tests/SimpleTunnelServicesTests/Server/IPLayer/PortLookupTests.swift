import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("IP layer: finding a packet's destination port")
struct PortLookupTests {
    static let source = "fd00:90::2"
    static let destination = "fd00:211::2"

    /// A TCP SYN's first bytes to port 22 behind `count` destination-options headers.
    static func behindDestinationOptions(_ count: Int, port: UInt16 = 22, to destination: String = destination) -> ByteBuffer {
        IPv6TestPackets.packet(
            from: source, to: destination, nextHeader: 6, destinationPort: port, extensions: Array(repeating: (60, 0), count: count))
    }

    static func lookup(_ bytes: [UInt8]) -> PortLookup {
        IPv6PacketHeader.destinationPort(of: ByteBuffer(bytes: bytes))
    }

    @Test(arguments: [0, 1, 8])
    func thePortIsFoundBehindUpToEightDestinationOptionsHeaders(count: Int) {
        #expect(IPv6PacketHeader.destinationPort(of: Self.behindDestinationOptions(count)) == .port(22))
    }

    @Test(arguments: [9, 10, 12, 20])
    func pastEightHeadersThePortIsUndeterminableNotAbsent(count: Int) {
        #expect(IPv6PacketHeader.destinationPort(of: Self.behindDestinationOptions(count)) == .undeterminable(.tooManyExtensionHeaders))
    }

    @Test func hopByHopRoutingAndAWholeFragmentAreWalked() {
        let chain = IPv6TestPackets.packet(from: Self.source, to: Self.destination, nextHeader: 6, destinationPort: 80, extensions: [(0, 1), (43, 2), (44, 0), (60, 0)])
        #expect(IPv6PacketHeader.destinationPort(of: chain) == .port(80))
        // SCTP's header starts with its ports too.
        #expect(IPv6PacketHeader.destinationPort(of: IPv6TestPackets.packet(from: Self.source, to: Self.destination, nextHeader: 132, destinationPort: 22)) == .port(22))
    }

    @Test func fragments() {
        var first = Array(IPv6TestPackets.packet(from: Self.source, to: Self.destination, nextHeader: 6, destinationPort: 22, extensions: [(44, 0)]).readableBytesView)
        first[40 + 3] = 1  // offset 0, more fragments
        #expect(Self.lookup(first) == .port(22))
        // A first fragment that ends before the port: the port is in the next one, out of every rule's sight.
        #expect(Self.lookup(Array(first.prefix(40 + 8 + 2))) == .undeterminable(.fragmentWithoutTransportHeader))
        #expect(Self.lookup(Array(first.prefix(40 + 8))) == .undeterminable(.fragmentWithoutTransportHeader))
        // A later fragment carries no port header: its bytes are not read as one.
        var later = first
        later[40 + 2] = 0
        later[40 + 3] = 0x09  // offset 1, more fragments
        #expect(Self.lookup(later) == .noPort)
    }

    @Test func authenticationEncryptionAndUnknownExtensionHeadersHideThePort() {
        let ah = IPv6TestPackets.packet(from: Self.source, to: Self.destination, nextHeader: 6, extensions: [(51, 1)])
        #expect(IPv6PacketHeader.destinationPort(of: ah) == .undeterminable(.authenticationHeader))
        let esp = IPv6TestPackets.packet(from: Self.source, to: Self.destination, nextHeader: 50)
        #expect(IPv6PacketHeader.destinationPort(of: esp) == .undeterminable(.encrypted))
        for unknown: UInt8 in [135, 139, 140, 253, 254] {
            let packet = IPv6TestPackets.packet(from: Self.source, to: Self.destination, nextHeader: 6, extensions: [(unknown, 0)])
            #expect(IPv6PacketHeader.destinationPort(of: packet) == .undeterminable(.unknownExtensionHeader), "\(unknown)")
        }
    }

    @Test func protocolsWithoutPortsHaveNone() {
        // ICMPv6, GRE, No Next Header, and a number no extension header has.
        for protocolNumber: UInt8 in [58, 47, 59, 200] {
            let packet = IPv6TestPackets.packet(from: Self.source, to: Self.destination, nextHeader: protocolNumber, extensions: [(60, 0)])
            #expect(IPv6PacketHeader.destinationPort(of: packet) == .noPort, "\(protocolNumber)")
        }
    }

    @Test func aPacketCutShortHasAnUndeterminablePort() {
        let whole = Array(Self.behindDestinationOptions(2).readableBytesView)
        #expect(Self.lookup(Array(whole.prefix(40))) == .undeterminable(.truncated))
        #expect(Self.lookup(Array(whole.prefix(40 + 8 + 1))) == .undeterminable(.truncated))
        #expect(Self.lookup(Array(whole.prefix(40 + 16 + 3))) == .undeterminable(.truncated))
        #expect(Self.lookup(Array(whole.prefix(40 + 16 + 4))) == .port(22))
        // A header whose length points past the end.
        var long = whole
        long[40 + 1] = 200
        #expect(Self.lookup(long) == .undeterminable(.truncated))
    }

    // MARK: IPv4

    static func ipv4(_ protocolNumber: UInt8 = 6, fragment: UInt16 = 0, cutTo length: Int? = nil) -> ByteBuffer {
        var packet = ipv4Packet(from: "10.90.0.2", to: "198.18.3.1", protocolNumber: protocolNumber, destinationPort: 22)
        packet.setInteger(fragment, at: 6)
        if let length { packet.moveWriterIndex(to: length) }
        return packet
    }

    @Test func ipv4FirstFragmentsTooShortOptionsAndIPsec() {
        #expect(IPv4PacketHeader.destinationPort(of: Self.ipv4()) == .port(22))
        #expect(IPv4PacketHeader.destinationPort(of: Self.ipv4(fragment: 0x2000)) == .port(22))
        #expect(IPv4PacketHeader.destinationPort(of: Self.ipv4(fragment: 0x2000, cutTo: 23)) == .undeterminable(.fragmentWithoutTransportHeader))
        #expect(IPv4PacketHeader.destinationPort(of: Self.ipv4(cutTo: 20)) == .undeterminable(.truncated))
        #expect(IPv4PacketHeader.destinationPort(of: Self.ipv4(fragment: 0x2001)) == .noPort)
        #expect(IPv4PacketHeader.destinationPort(of: Self.ipv4(1)) == .noPort)
        #expect(IPv4PacketHeader.destinationPort(of: Self.ipv4(50)) == .undeterminable(.encrypted))
        #expect(IPv4PacketHeader.destinationPort(of: Self.ipv4(51)) == .undeterminable(.authenticationHeader))
        #expect(IPv4PacketHeader.destinationPort(of: Self.ipv4(17)) == .port(22))
        // Options as long as they may be (IHL 15): the port lies past the packet's end.
        var options = Self.ipv4()
        options.setInteger(UInt8(0x4F), at: 0)
        #expect(IPv4PacketHeader.destinationPort(of: options) == .undeterminable(.truncated))
        options.setInteger(UInt8(0x44), at: 0)
        #expect(IPv4PacketHeader.destinationPort(of: options) == .undeterminable(.malformedHeader))
    }
}
