import NIOCore
@testable import SimpleTunnelServices

/// Hand-built TCP segments over IPv4 and IPv6 for the offload tests, with
/// checksums computed by `IPv4TestPackets.checksum` (a byte-at-a-time
/// reference, independent of the code under test).
struct TCPTestFlow {
    var isIPv4: Bool
    var sourcePort: UInt16 = 40_000
    var destinationPort: UInt16 = 5201
    var acknowledgement: UInt32 = 0x1122_3344
    var window: UInt16 = 512
    var ttl: UInt8 = 64
    /// TCP options (a multiple of 4 bytes), e.g. `timestamps`.
    var options: [UInt8] = []

    static let sourceIPv4: [UInt8] = [10, 90, 0, 2]
    static let destinationIPv4: [UInt8] = [198, 18, 2, 2]
    static let sourceIPv6: [UInt8] = [0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    static let destinationIPv6: [UInt8] = [0xFD, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9]
    /// NOP, NOP, timestamps (kind 8, length 10).
    static let timestamps: [UInt8] = [1, 1, 8, 10, 0, 0, 0x10, 0, 0, 0, 0x20, 0]

    static let ack: UInt8 = 0x10, psh: UInt8 = 0x08, fin: UInt8 = 0x01, syn: UInt8 = 0x02, cwr: UInt8 = 0x80

    var addresses: [UInt8] { isIPv4 ? Self.sourceIPv4 + Self.destinationIPv4 : Self.sourceIPv6 + Self.destinationIPv6 }
    var ipHeaderLength: Int { isIPv4 ? 20 : 40 }
    var headersLength: Int { ipHeaderLength + 20 + options.count }

    /// One segment with valid checksums (unless `validChecksum` is false: then the TCP checksum is off by one).
    func segment(sequence: UInt32, payload: [UInt8], flags: UInt8 = ack, identification: UInt16 = 1, validChecksum: Bool = true) -> [UInt8] {
        var tcp = tcpHeader(sequence: sequence, flags: flags) + payload
        let sum = IPv4TestPackets.checksum(pseudoHeader(transportLength: tcp.count) + tcp) &+ (validChecksum ? 0 : 1)
        tcp[16] = UInt8(sum >> 8)
        tcp[17] = UInt8(sum & 0xFF)
        return ipHeader(payloadLength: tcp.count, identification: identification) + tcp
    }

    func tcpHeader(sequence: UInt32, flags: UInt8) -> [UInt8] {
        let offset = UInt8((20 + options.count) / 4) << 4
        return Self.bigEndian(sourcePort) + Self.bigEndian(destinationPort) + Self.bigEndian(sequence) + Self.bigEndian(acknowledgement)
            + [offset, flags] + Self.bigEndian(window) + [0, 0, 0, 0] + options
    }

    func ipHeader(payloadLength: Int, identification: UInt16) -> [UInt8] {
        if isIPv4 {
            var header: [UInt8] = [0x45, 0] + Self.bigEndian(UInt16(20 + payloadLength)) + Self.bigEndian(identification) + [0x40, 0, ttl, 6, 0, 0] + addresses
            let sum = IPv4TestPackets.checksum(header)
            header[10] = UInt8(sum >> 8)
            header[11] = UInt8(sum & 0xFF)
            return header
        }
        return [0x60, 0, 0, 0] + Self.bigEndian(UInt16(payloadLength)) + [6, ttl] + addresses
    }

    func pseudoHeader(transportLength: Int) -> [UInt8] {
        isIPv4
            ? addresses + [0, 6] + Self.bigEndian(UInt16(transportLength))
            : addresses + Self.bigEndian(UInt32(transportLength)) + [0, 0, 0, 6]
    }

    /// What the kernel hands over with TSO: one packet of every payload byte,
    /// the TCP checksum field holding only the pseudo-header's sum.
    func superPacket(sequence: UInt32, payload: [UInt8], flags: UInt8 = ack, identification: UInt16 = 7) -> [UInt8] {
        var packet = segment(sequence: sequence, payload: payload, flags: flags, identification: identification)
        let transportLength = packet.count - ipHeaderLength
        let partial = ~IPv4TestPackets.checksum(pseudoHeader(transportLength: transportLength))
        packet[ipHeaderLength + 16] = UInt8(partial >> 8)
        packet[ipHeaderLength + 17] = UInt8(partial & 0xFF)
        return packet
    }

    /// Payload bytes that say where they are in the stream.
    static func payload(_ count: Int, from start: Int = 0) -> [UInt8] {
        (start..<(start + count)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
    }

    static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }
}

/// Checks on a packet with the reference checksum.
enum TCPTestChecks {
    static func isIPv4(_ packet: [UInt8]) -> Bool { packet[0] >> 4 == 4 }
    static func ipHeaderLength(_ packet: [UInt8]) -> Int { isIPv4(packet) ? Int(packet[0] & 0x0F) * 4 : 40 }

    /// The IPv4 header checksum (when IPv4) and the TCP checksum verify.
    static func checksumsVerify(_ packet: [UInt8]) -> Bool {
        let ipLength = ipHeaderLength(packet)
        if isIPv4(packet), IPv4TestPackets.checksum(packet[..<ipLength]) != 0 { return false }
        let tcp = Array(packet[ipLength...])
        let addresses = isIPv4(packet) ? Array(packet[12..<20]) : Array(packet[8..<40])
        let pseudo = isIPv4(packet)
            ? addresses + [0, 6] + TCPTestFlow.bigEndian(UInt16(tcp.count))
            : addresses + TCPTestFlow.bigEndian(UInt32(tcp.count)) + [0, 0, 0, 6]
        return IPv4TestPackets.checksum(pseudo + tcp) == 0
    }

    static func sequence(_ packet: [UInt8]) -> UInt32 {
        let tcp = ipHeaderLength(packet)
        return packet[(tcp + 4)..<(tcp + 8)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func flags(_ packet: [UInt8]) -> UInt8 { packet[ipHeaderLength(packet) + 13] }
    static func identification(_ packet: [UInt8]) -> UInt16 { UInt16(packet[4]) << 8 | UInt16(packet[5]) }

    static func ipLength(_ packet: [UInt8]) -> Int {
        isIPv4(packet) ? Int(packet[2]) << 8 | Int(packet[3]) : 40 + (Int(packet[4]) << 8 | Int(packet[5]))
    }

    static func payload(_ packet: [UInt8]) -> [UInt8] {
        let tcp = ipHeaderLength(packet)
        return Array(packet[(tcp + Int(packet[tcp + 12] >> 4) * 4)...])
    }
}
