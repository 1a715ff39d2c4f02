import NIOCore
@testable import SimpleTunnelServices

/// Any bytes, read as an IPv6 and as an IPv4 packet's port: the lookup never
/// traps; a port it finds lies within the packet (IPv6: at an 8-byte step past
/// the fixed header; IPv4: right past the header its IHL gives); bytes after
/// the packet change no answer but a cut-short one, and cutting the packet
/// short changes an answer only into a cut-short one; where the packet
/// starts in its buffer changes nothing; and a Deny rule for port 22 refuses
/// that port, leaves other ports and no port alone and fails closed on an
/// undeterminable one.
func fuzzPortLookup(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    check(bytes, family: "IPv6", lookup: IPv6PacketHeader.destinationPort(of:)) { port in
        stride(from: 40, through: bytes.count - 4, by: 8).contains { bigEndian(bytes, at: $0 + 2) == port }
    }
    check(bytes, family: "IPv4", lookup: IPv4PacketHeader.destinationPort(of:)) { port in
        let headerLength = Int((bytes.first ?? 0) & 0x0F) * 4
        return headerLength >= 20 && headerLength + 4 <= bytes.count && bigEndian(bytes, at: headerLength + 2) == port
    }
    return 0
}

private let denyPort22 = PacketDestinationFilter(try! DestinationPolicy(allow: [], deny: ["*:22"]))

private func check(_ bytes: [UInt8], family: String, lookup: (ByteBuffer) -> PortLookup, portIsThere: (UInt16) -> Bool) {
    let answer = lookup(ByteBuffer(bytes: bytes))
    if case .port(let port) = answer, !portIsThere(port) {
        fatalError("\(family): port \(port) is not where the walk may find one in \(bytes.count) bytes")
    }
    // The packet further on in its buffer, as after a virtio_net_hdr.
    var shifted = ByteBuffer(bytes: [0xAA, 0xBB, 0xCC] + bytes)
    shifted.moveReaderIndex(forwardBy: 3)
    guard lookup(shifted) == answer else { fatalError("\(family): the packet's place in its buffer changed \(answer)") }
    let cutShort = answer.isCutShort
    let longer = lookup(ByteBuffer(bytes: bytes + [UInt8](repeating: 0x3C, count: 64)))
    guard cutShort || longer == answer else { fatalError("\(family): bytes after the packet changed \(answer) into \(longer)") }
    for length in Set([0, 1, 20, 40, bytes.count / 2, bytes.count - 1]) where length >= 0 && length < bytes.count {
        let shorter = lookup(ByteBuffer(bytes: bytes.prefix(length)))
        guard shorter == answer || shorter.isCutShort else {
            fatalError("\(family): cut to \(length) bytes, \(answer) became \(shorter)")
        }
    }
    let verdict = family == "IPv6"
        ? denyPort22.verdict(for: IPv6Address(rawValue: 0x20010DB8 << 96), port: answer)
        : denyPort22.verdict(for: IPv4Address(198, 51, 100, 7), port: answer)
    let expected: PacketDestinationFilter.Verdict = switch answer {
    case .port(22): .refused
    case .port, .noPort: .allowed
    case .undeterminable: .portUndeterminable
    }
    guard verdict == expected else { fatalError("\(family): a Deny rule for port 22 made \(verdict) of \(answer)") }
}

private func bigEndian(_ bytes: [UInt8], at index: Int) -> UInt16 {
    UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1])
}

extension PortLookup {
    /// What a packet that ends too soon answers.
    fileprivate var isCutShort: Bool {
        self == .undeterminable(.truncated) || self == .undeterminable(.fragmentWithoutTransportHeader)
    }
}
