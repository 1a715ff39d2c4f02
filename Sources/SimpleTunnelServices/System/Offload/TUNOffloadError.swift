/// Why a packet read from a TUN device with offloads could not be turned
/// into whole packets. The kernel writes these headers, so any of them means
/// a kernel this code does not understand; the packet is dropped and counted.
enum TUNOffloadError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The read was shorter than the virtio_net_hdr.
    case truncatedHeader(bytes: Int)
    /// The header asks for something this code did not enable (UFO, an unknown type).
    case unsupportedGSOType(UInt8)
    /// The header and the packet do not agree (lengths, offsets, protocol).
    case inconsistent(String)

    var description: String {
        switch self {
        case .truncatedHeader(let bytes):
            return "a TUN read of \(bytes) bytes is shorter than its 10-byte virtio_net_hdr"
        case .unsupportedGSOType(let type):
            return "the kernel sent a super-packet of GSO type \(type), which was not enabled; set SIMPLETUNNEL_TUN_OFFLOAD=off if this repeats"
        case .inconsistent(let what):
            return "a TUN super-packet's virtio_net_hdr does not match the packet: \(what)"
        }
    }
}
