/// The `virtio_net_hdr` a TUN device opened with `IFF_VNET_HDR` puts before
/// every packet read and expects before every packet written: whether the
/// packet is a GSO super-packet to be cut into `gsoSize` segments, and where a
/// checksum still has to be completed. Ten bytes in the machine's byte order
/// (a TUN device uses the legacy, native-endian layout).
struct VirtioNetHeader: Hashable, Sendable {
    static let size = 10

    /// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum at `checksumStart + checksumOffset`
    /// holds only the pseudo-header's sum; the rest is still to be added.
    static let needsChecksum: UInt8 = 1

    /// `VIRTIO_NET_HDR_GSO_*`, without the ECN bit.
    enum GSOType: UInt8, Sendable {
        case none = 0
        case tcpIPv4 = 1
        case udp = 3
        case tcpIPv6 = 4
        case udpL4 = 5
    }

    /// `VIRTIO_NET_HDR_GSO_ECN`: the super-packet's first segment carries CWR.
    static let gsoECNBit: UInt8 = 0x80

    var flags: UInt8 = 0
    var gsoTypeByte: UInt8 = 0
    /// Length of the headers (IP and transport) before the payload.
    var headerLength: UInt16 = 0
    /// Payload bytes per segment.
    var gsoSize: UInt16 = 0
    var checksumStart: UInt16 = 0
    var checksumOffset: UInt16 = 0

    /// The header of a packet that needs nothing done: written before every
    /// packet that is not a super-packet.
    static let plain = VirtioNetHeader()

    init(flags: UInt8 = 0, gsoType: GSOType = .none, headerLength: UInt16 = 0, gsoSize: UInt16 = 0, checksumStart: UInt16 = 0, checksumOffset: UInt16 = 0) {
        self.flags = flags
        self.gsoTypeByte = gsoType.rawValue
        self.headerLength = headerLength
        self.gsoSize = gsoSize
        self.checksumStart = checksumStart
        self.checksumOffset = checksumOffset
    }

    /// Reads the first ten bytes; nil when there are fewer.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= Self.size else { return nil }
        flags = bytes[0]
        gsoTypeByte = bytes[1]
        headerLength = bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self)
        gsoSize = bytes.loadUnaligned(fromByteOffset: 4, as: UInt16.self)
        checksumStart = bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)
        checksumOffset = bytes.loadUnaligned(fromByteOffset: 8, as: UInt16.self)
    }

    /// The GSO type, or nil for a value this code does not know.
    var gsoType: GSOType? { GSOType(rawValue: gsoTypeByte & ~Self.gsoECNBit) }

    /// The ten bytes, as the kernel reads them.
    var bytes: [UInt8] {
        var result = [UInt8](repeating: 0, count: Self.size)
        result.withUnsafeMutableBytes { out in
            out[0] = flags
            out[1] = gsoTypeByte
            out.storeBytes(of: headerLength, toByteOffset: 2, as: UInt16.self)
            out.storeBytes(of: gsoSize, toByteOffset: 4, as: UInt16.self)
            out.storeBytes(of: checksumStart, toByteOffset: 6, as: UInt16.self)
            out.storeBytes(of: checksumOffset, toByteOffset: 8, as: UInt16.self)
        }
        return result
    }
}
