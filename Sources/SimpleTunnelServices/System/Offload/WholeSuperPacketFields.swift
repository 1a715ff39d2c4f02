import NIOCore

/// What makes a TCP super-packet read from a device the form the wire
/// carries whole (PROTOCOL.md B8): its TCP checksum field the pseudo-header's
/// sum over the whole TCP length and its IPv4 header checksum valid, whatever
/// the kernel left, so the receiver can hand it to its own device as it is.
/// Worked out without writing to the packet; stored only where they differ.
struct WholeSuperPacketFields {
    let segmentSize: UInt16
    /// The IPv4 header checksum (offset 10); nil for IPv6.
    let ipv4HeaderChecksum: UInt16?
    let tcpChecksumOffset: Int
    let tcpChecksum: UInt16

    /// nil for anything but a TCP super-packet whose header the receiver
    /// will rebuild as the kernel's own; that is split or completed instead.
    init?(_ packet: UnsafeRawBufferPointer, header: VirtioNetHeader) {
        guard header.gsoType == .tcpIPv4 || header.gsoType == .tcpIPv6, header.gsoSize > 0,
            let (rebuilt, layout) = try? SuperPacket.header(for: packet, segmentSize: header.gsoSize),
            layout.segmentCount > 1, rebuilt.gsoType == header.gsoType, rebuilt.checksumStart == header.checksumStart,
            header.checksumOffset == 16
        else { return nil }
        let transport = layout.transportOffset
        if layout.isIPv4 {
            // The header's sum with its checksum field (bytes 10-11) left out.
            let sum = InternetChecksum.add(
                InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: packet[..<10])),
                InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: packet[12..<transport])))
            ipv4HeaderChecksum = InternetChecksum.finish(sum)
        } else {
            ipv4HeaderChecksum = nil
        }
        let addresses = UnsafeRawBufferPointer(rebasing: layout.isIPv4 ? packet[12..<20] : packet[8..<40])
        let pseudo = InternetChecksum.pseudoHeaderSum(addresses: addresses, protocolNumber: TCPSegmentation.tcpProtocolNumber, transportLength: packet.count - transport)
        tcpChecksum = UInt16(truncatingIfNeeded: InternetChecksum.fold(UInt64(pseudo)))
        tcpChecksumOffset = transport + 16
        segmentSize = header.gsoSize
    }

    /// Sets the fields in `packet` (from its reader index) that differ.
    func store(into packet: inout ByteBuffer) {
        let start = packet.readerIndex
        if let ipv4HeaderChecksum, packet.getInteger(at: start + 10, as: UInt16.self) != ipv4HeaderChecksum {
            packet.setInteger(ipv4HeaderChecksum, at: start + 10)
        }
        if packet.getInteger(at: start + tcpChecksumOffset, as: UInt16.self) != tcpChecksum {
            packet.setInteger(tcpChecksum, at: start + tcpChecksumOffset)
        }
    }
}
