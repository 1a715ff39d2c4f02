import NIOCore
@testable import SimpleTunnelServices

/// Hand-built IPv4 packets for TUN tests: enough of IP, ICMP and UDP to
/// answer a ping and to send datagrams the kernel accepts.
enum IPv4TestPackets {
    /// The RFC 1071 one's-complement sum, folded and inverted.
    static func checksum(_ bytes: some Collection<UInt8>) -> UInt16 {
        var sum: UInt32 = 0
        var iterator = bytes.makeIterator()
        while let high = iterator.next() {
            let low = iterator.next() ?? 0
            sum += UInt32(high) << 8 | UInt32(low)
        }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }

    static func header(from source: IPv4Address, to destination: IPv4Address, protocolNumber: UInt8, payloadLength: Int, identification: UInt16 = 1) -> [UInt8] {
        let total = 20 + payloadLength
        var header: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF),
                               UInt8(identification >> 8), UInt8(identification & 0xFF), 0x40, 0,
                               64, protocolNumber, 0, 0]
        header += bytes(of: source) + bytes(of: destination)
        let sum = checksum(header)
        header[10] = UInt8(sum >> 8)
        header[11] = UInt8(sum & 0xFF)
        return header
    }

    static func udp(from source: IPv4Address, _ sourcePort: UInt16, to destination: IPv4Address, _ destinationPort: UInt16, payload: [UInt8], identification: UInt16 = 1) -> ByteBuffer {
        let length = 8 + payload.count
        var segment: [UInt8] = [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xFF), UInt8(destinationPort >> 8), UInt8(destinationPort & 0xFF),
                                UInt8(length >> 8), UInt8(length & 0xFF), 0, 0] + payload
        let pseudoHeader = bytes(of: source) + bytes(of: destination) + [0, 17, UInt8(length >> 8), UInt8(length & 0xFF)]
        var sum = checksum(pseudoHeader + segment)
        if sum == 0 { sum = 0xFFFF }
        segment[6] = UInt8(sum >> 8)
        segment[7] = UInt8(sum & 0xFF)
        return ByteBuffer(bytes: header(from: source, to: destination, protocolNumber: 17, payloadLength: length, identification: identification) + segment)
    }

    struct EchoRequest {
        let source: IPv4Address
        let destination: IPv4Address
        /// ICMP header and data, from the type byte on.
        let icmp: [UInt8]
    }

    /// The packet as an ICMP echo request, or nil for anything else.
    static func echoRequest(in packet: ByteBuffer) -> EchoRequest? {
        let bytes = Array(packet.readableBytesView)
        guard bytes.count >= 28, bytes[0] >> 4 == 4, bytes[9] == 1 else { return nil }
        let headerLength = Int(bytes[0] & 0x0F) * 4
        guard bytes.count >= headerLength + 8, bytes[headerLength] == 8 else { return nil }
        return EchoRequest(source: address(bytes[12..<16]), destination: address(bytes[16..<20]), icmp: Array(bytes[headerLength...]))
    }

    /// The echo reply the request's destination would send.
    static func echoReply(to request: EchoRequest) -> ByteBuffer {
        var icmp = request.icmp
        icmp[0] = 0
        icmp[2] = 0
        icmp[3] = 0
        let sum = checksum(icmp)
        icmp[2] = UInt8(sum >> 8)
        icmp[3] = UInt8(sum & 0xFF)
        return ByteBuffer(bytes: header(from: request.destination, to: request.source, protocolNumber: 1, payloadLength: icmp.count) + icmp)
    }

    private static func bytes(of address: IPv4Address) -> [UInt8] {
        let (a, b, c, d) = address.octets
        return [a, b, c, d]
    }

    private static func address(_ bytes: ArraySlice<UInt8>) -> IPv4Address {
        IPv4Address(rawValue: bytes.reduce(0) { $0 << 8 | UInt32($1) })
    }
}
