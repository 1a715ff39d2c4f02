/// What a packet says of its destination port, for the destination policy's
/// port rules. "No port" (ICMP, a later fragment) is not what a port rule is
/// about; a port that may be there but could not be read is another matter:
/// a rule about that port must not let it slip past (the filter fails closed).
enum PortLookup: Hashable, Sendable {
    /// A protocol with ports (TCP, UDP, SCTP, DCCP, UDP-Lite), to this one.
    case port(UInt16)
    /// A protocol without ports (ICMP, ICMPv6, GRE, no next header), or a
    /// fragment after the first, whose bytes are no port header.
    case noPort
    /// There may be a port, but it could not be found.
    case undeterminable(Reason)

    enum Reason: Hashable, Sendable {
        /// More IPv6 extension headers than the walk follows.
        case tooManyExtensionHeaders
        /// The packet ends before an extension header or the port does.
        case truncated
        /// A first fragment that ends before the port: it is in a later one, where no rule can see it.
        case fragmentWithoutTransportHeader
        /// An IPv6 extension header the walk does not follow (mobility, HIP, shim6, experiments).
        case unknownExtensionHeader
        /// Behind an Authentication Header.
        case authenticationHeader
        /// Inside ESP, encrypted.
        case encrypted
        /// An IPv4 header length under 20 bytes.
        case malformedHeader
    }

    /// Protocols whose header starts with the source and destination ports.
    static func carriesPorts(_ protocolNumber: UInt8) -> Bool {
        switch protocolNumber {
        case 6, 17, 33, 132, 136: true  // TCP, UDP, DCCP, SCTP, UDP-Lite
        default: false
        }
    }
}
