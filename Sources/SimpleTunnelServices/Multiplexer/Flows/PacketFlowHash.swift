import NIOCore

/// Which connection an IP packet belongs to, as a bucket number: its
/// addresses, its protocol and, for TCP and UDP, its ports. Only the first
/// header is read (an IPv6 packet with extension headers, or a fragment
/// after the first, hashes by its addresses and protocol alone: still one
/// bucket per connection, shared with more of its neighbours). Bytes too
/// short for a header all go to bucket 0. Reads from a peer or the device,
/// so it only ever reads within the packet.
enum PacketFlowHash {
    static func bucket(of packet: ByteBuffer, count: Int) -> Int {
        let hash = packet.withUnsafeReadableBytes { bytes -> UInt64 in
            guard let first = bytes.first else { return 0 }
            switch first >> 4 {
            case 4: return ipv4(bytes)
            case 6: return ipv6(bytes)
            default: return 0
            }
        }
        return Int(truncatingIfNeeded: hash % UInt64(count))
    }

    private static let tcp: UInt8 = 6
    private static let udp: UInt8 = 17

    private static func ipv4(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard bytes.count >= 20 else { return 0 }
        let headerLength = Int(bytes[0] & 0x0F) * 4
        let proto = bytes[9]
        var hash = mix(0, word(bytes, at: 12))
        hash = mix(hash, word(bytes, at: 16))
        hash = mix(hash, UInt32(proto))
        // Ports only in the first fragment (offset 0), which is the only one that has them.
        let fragmentOffset = (UInt16(bytes[6] & 0x1F) << 8) | UInt16(bytes[7])
        if proto == tcp || proto == udp, fragmentOffset == 0, headerLength >= 20, bytes.count >= headerLength + 4 {
            hash = mix(hash, word(bytes, at: headerLength))
        }
        return hash
    }

    private static func ipv6(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard bytes.count >= 40 else { return 0 }
        let nextHeader = bytes[6]
        var hash: UInt64 = 0
        for offset in stride(from: 8, to: 40, by: 4) {
            hash = mix(hash, word(bytes, at: offset))
        }
        hash = mix(hash, UInt32(nextHeader))
        if nextHeader == tcp || nextHeader == udp, bytes.count >= 44 {
            hash = mix(hash, word(bytes, at: 40))
        }
        return hash
    }

    private static func word(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// One multiply-xorshift round per word: cheap, and spreads nearby ports and addresses.
    private static func mix(_ hash: UInt64, _ word: UInt32) -> UInt64 {
        var value = (hash ^ UInt64(word)) &* 0x9E37_79B9_7F4A_7C15
        value ^= value >> 29
        return value
    }
}
