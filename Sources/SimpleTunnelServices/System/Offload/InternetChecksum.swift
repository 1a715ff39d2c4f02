/// The RFC 1071 one's-complement sum that IPv4, TCP and UDP checksums use.
///
/// Partial sums are kept as big-endian 16-bit values widened to `UInt32`, so
/// sums over separate pieces (a pseudo-header, a header, a payload) simply add
/// up and are folded once at the end.
enum InternetChecksum {
    /// The folded sum of `bytes` read as big-endian 16-bit words (an odd last
    /// byte padded with zero), a value in 0...0xFFFF.
    static func sum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        // Native-order words: the one's-complement sum commutes with byte
        // swapping, so summing 32-bit loads and swapping the folded result once
        // gives the big-endian sum at a quarter of the loads.
        var total: UInt64 = 0
        var offset = 0
        let count = bytes.count
        while offset + 4 <= count {
            total &+= UInt64(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            offset += 4
        }
        var tail: UInt32 = 0
        withUnsafeMutableBytes(of: &tail) { word in
            for index in 0..<(count - offset) { word[index] = bytes[offset + index] }
        }
        total &+= UInt64(tail)
        let native = UInt16(truncatingIfNeeded: fold(total))
        return UInt32(UInt16(bigEndian: native))
    }

    /// Folds carries back in until the value fits 16 bits.
    static func fold(_ value: UInt64) -> UInt32 {
        var value = value
        while value > 0xFFFF { value = (value & 0xFFFF) + (value >> 16) }
        return UInt32(value)
    }

    /// Adds two partial sums.
    static func add(_ first: UInt32, _ second: UInt32) -> UInt32 {
        fold(UInt64(first) + UInt64(second))
    }

    /// The checksum field's value: the complement of the folded sum.
    static func finish(_ sum: UInt32) -> UInt16 {
        ~UInt16(truncatingIfNeeded: fold(UInt64(sum)))
    }

    /// The TCP/UDP pseudo-header's sum: both addresses as they stand in the
    /// packet (4 or 16 bytes each), the protocol and the transport length.
    static func pseudoHeaderSum(addresses: UnsafeRawBufferPointer, protocolNumber: UInt8, transportLength: Int) -> UInt32 {
        fold(UInt64(sum(addresses)) + UInt64(protocolNumber) + UInt64(transportLength & 0xFFFF) + UInt64(transportLength >> 16))
    }
}
