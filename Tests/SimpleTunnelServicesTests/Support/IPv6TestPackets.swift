import NIOCore
@testable import SimpleTunnelServices

/// Hand-built IPv6 packets for router and filter tests: a fixed header, any
/// extension headers, and the first bytes of a TCP, UDP or ICMPv6 payload.
enum IPv6TestPackets {
    /// `nextHeader` 6 (TCP), 17 (UDP) or 58 (ICMPv6); `extensions` are
    /// (type, length in 8-byte units less one) pairs placed before it.
    static func packet(
        from source: String, to destination: String, nextHeader: UInt8 = 17, destinationPort: UInt16 = 53,
        extensions: [(type: UInt8, units: UInt8)] = []
    ) -> ByteBuffer {
        var payload: [UInt8] = []
        var chain = extensions.map(\.type) + [nextHeader]
        let first = chain.removeFirst()
        for (index, header) in extensions.enumerated() {
            var bytes = [chain[index], header.units] + [UInt8](repeating: 0, count: Int(header.units) * 8 + 6)
            if header.type == 44 { bytes = [chain[index], 0, 0, 0, 0, 0, 0, 1] }
            payload += bytes
        }
        payload += [0x30, 0x39, UInt8(destinationPort >> 8), UInt8(destinationPort & 0xFF), 0, 8, 0, 0]
        var bytes: [UInt8] = [0x60, 0, 0, 0, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF), first, 64]
        bytes += Self.bytes(of: source) + Self.bytes(of: destination) + payload
        return ByteBuffer(bytes: bytes)
    }

    static func bytes(of text: String) -> [UInt8] {
        let value = IPv6Address(text)?.rawValue ?? 0
        return (0..<16).map { UInt8(truncatingIfNeeded: value >> (120 - 8 * $0)) }
    }
}
