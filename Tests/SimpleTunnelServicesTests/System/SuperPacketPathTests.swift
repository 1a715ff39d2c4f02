import NIOCore
import SimpleTunnelWire
import Testing
@testable import SimpleTunnelServices

/// Whether an IP flow carries super-packets whole is decided once, from the
/// offer, the device and the answer; both ends then only ask the path.
@Suite("Offload: the super-packet path of an IP flow")
struct SuperPacketPathTests {
    static let agreedAnswer: [String: PropertyListValue] = [IPFlowConfigurationKey.superPackets: PropertyListValue(1)]

    static func superPacket(payload: Int = 4 * 1300 + 7, cut: Int = 0) -> TunnelPacket {
        let bytes = TCPTestFlow(isIPv4: true).superPacket(sequence: 9, payload: TCPTestFlow.payload(payload), flags: TCPTestFlow.ack)
        return TunnelPacket(bytes: ByteBuffer(bytes: bytes.dropLast(cut)), segmentSize: 1300)
    }

    static let plain = TunnelPacket(bytes: ByteBuffer(bytes: TCPTestFlow(isIPv4: true).superPacket(sequence: 1, payload: [1, 2, 3], flags: TCPTestFlow.ack)))

    @Test(arguments: [false, true], [false, true])
    func aClientOffersOnlyForADeviceThatReadsThemWholeAndAgreesOnlyWhenItOffered(allowed: Bool, deviceTakes: Bool) {
        let offer = SuperPacketPath.clientOffers(allowed, device: InMemoryPacketFlow(takesSuperPackets: deviceTakes))
        let expected: Bool = allowed && deviceTakes
        #expect(offer == expected)
        let agreed = SuperPacketPath(offered: offer, answer: Self.agreedAnswer)
        #expect(agreed.description == (offer ? "agreed" : "off"))
        // A server that names them unasked, or says nothing, gets none.
        #expect(SuperPacketPath(offered: false, answer: Self.agreedAnswer) == .segmented)
        #expect(SuperPacketPath(offered: true, answer: [:]) == .segmented)
        #expect(SuperPacketPath(offered: true, answer: nil) == .segmented)
    }

    @Test(arguments: [false, true], [false, true])
    func aServerAgreesWhenOfferedAndItsDeviceReadsThemWholeAndSaysSoInItsAnswer(offered: Bool, deviceTakes: Bool) {
        var answer: [String: PropertyListValue] = ["IPv4": .dictionary([:])]
        let path = SuperPacketPath(peerOffered: offered, device: InMemoryPacketFlow(takesSuperPackets: deviceTakes), answer: &answer)
        let agreed = offered && deviceTakes
        #expect(path.description == (agreed ? "agreed" : "off"))
        let said: Bool = answer[IPFlowConfigurationKey.superPackets] != nil
        #expect(said == agreed)
        #expect(answer["IPv4"] != nil, "the rest of the answer stays")
        // What the server answered, read by the client that offered, is the same path.
        #expect(SuperPacketPath(offered: offered, answer: answer) == path)
    }

    @Test func agreedASuperPacketGoesWholeAndComesInWholeOnlyIfItHoldsTogether() {
        var answer: [String: PropertyListValue] = [:]
        let path = SuperPacketPath(peerOffered: true, device: InMemoryPacketFlow(takesSuperPackets: true), answer: &answer)
        var malformed = 0
        let packets = [Self.superPacket(), Self.plain]
        let sent: [TunnelPacket] = path.toPeer(packets, allocator: ByteBufferAllocator(), malformed: &malformed)
        #expect(sent == packets)
        #expect(malformed == 0)
        #expect(path.admitsFromPeer(Self.superPacket()))
        #expect(path.admitsFromPeer(Self.plain))
        #expect(!path.admitsFromPeer(Self.superPacket(cut: 100)), "cut short")
        #expect(!path.admitsFromPeer(Self.superPacket(payload: 1000)), "one segment")
    }

    @Test func notAgreedEverySuperPacketIsCutForThePeerAndRefusedFromIt() {
        var malformed = 0
        let sent = SuperPacketPath.segmented.toPeer([Self.superPacket(), Self.plain], allocator: ByteBufferAllocator(), malformed: &malformed)
        #expect(malformed == 0)
        #expect(sent.count == 5 + 1, "five segments of 1300 bytes or less, then the plain packet")
        let anyWhole: Bool = sent.contains { $0.isSuperPacket }
        #expect(!anyWhole)
        #expect(sent.last == Self.plain)
        let headers: Int = sent[0].bytes.readableBytes - 1300
        let payloads: [Int] = sent.dropLast().map { $0.bytes.readableBytes - headers }
        let carried: Int = payloads.reduce(0, +)
        #expect(carried == 4 * 1300 + 7)
        #expect(!SuperPacketPath.segmented.admitsFromPeer(Self.superPacket()))
        #expect(SuperPacketPath.segmented.admitsFromPeer(Self.plain))
    }
}
