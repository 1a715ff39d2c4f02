import CTUNShims
import Foundation

/// Whether a TUN device should try the kernel's offloads. On by default;
/// `SIMPLETUNNEL_TUN_OFFLOAD=off` in the environment turns them off, for a
/// kernel that misbehaves with them or to compare.
public enum TUNOffloadRequest: Sendable, Hashable {
    /// A virtio_net_hdr and checksum and TSO offloads, as far as the kernel offers them.
    case automatic
    /// Bare IP packets, one per read and write.
    case off

    public static let environmentVariable = "SIMPLETUNNEL_TUN_OFFLOAD"

    /// `.off` when the environment variable says off, 0, no or false.
    public static var fromEnvironment: TUNOffloadRequest {
        let value = ProcessInfo.processInfo.environment[environmentVariable]?.lowercased()
        return ["off", "0", "no", "false"].contains(value ?? "") ? .off : .automatic
    }
}

/// What a TUN device was opened with: the kernel's answer to what we asked.
public struct TUNOffloads: Sendable, Hashable, CustomStringConvertible {
    /// Every read and write starts with a virtio_net_hdr (`IFF_VNET_HDR`).
    public let virtioHeader: Bool
    /// The `TUN_F_*` flags the kernel accepted (`TUNSETOFFLOAD`).
    public let kernelFlags: UInt32

    public static let off = TUNOffloads(virtioHeader: false, kernelFlags: 0)

    /// The flags asked for, then what is left to try when the kernel refuses them.
    /// UDP segmentation (USO) came with Linux 6.2; an older kernel refuses the
    /// whole set, and TCP's alone is tried next.
    static let attempts: [UInt32] = [
        UInt32(ST_TUN_F_CSUM | ST_TUN_F_TSO4 | ST_TUN_F_TSO6 | ST_TUN_F_USO4 | ST_TUN_F_USO6),
        UInt32(ST_TUN_F_CSUM | ST_TUN_F_TSO4 | ST_TUN_F_TSO6),
        UInt32(ST_TUN_F_CSUM),
        0,
    ]

    init(virtioHeader: Bool, kernelFlags: UInt32) {
        self.virtioHeader = virtioHeader
        self.kernelFlags = virtioHeader ? kernelFlags : 0
    }

    /// The kernel may hand us TCP super-packets (to split) and packets with checksums to complete.
    public var readsSuperPackets: Bool { kernelFlags & UInt32(ST_TUN_F_TSO4 | ST_TUN_F_TSO6) != 0 }

    /// The kernel may hand us UDP super-packets (to split into datagrams).
    public var readsUDPSuperPackets: Bool { kernelFlags & UInt32(ST_TUN_F_USO4 | ST_TUN_F_USO6) != 0 }

    public var description: String {
        guard virtioHeader else { return "off" }
        let names = [(ST_TUN_F_CSUM, "checksum"), (ST_TUN_F_TSO4, "TSO4"), (ST_TUN_F_TSO6, "TSO6"), (ST_TUN_F_USO4, "USO4"), (ST_TUN_F_USO6, "USO6")]
            .filter { kernelFlags & UInt32($0.0) != 0 }.map(\.1)
        // Writes coalesce either way: the kernel takes GSO super-packets whenever there is a virtio_net_hdr.
        return (names.isEmpty ? "virtio header only" : names.joined(separator: ", ")) + ", coalesced writes"
    }
}
