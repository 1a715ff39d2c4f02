/// The PROXY protocol version 2 header a load balancer puts before a
/// connection's first byte, naming the client it accepted (haproxy's
/// `send-proxy-v2`, the spec in haproxy's doc/proxy-protocol.txt), decided
/// as a value from the bytes read so far: more are needed, the header is
/// whole, or it is not one we take.
public enum ProxyHeaderDecoder {
    /// `\r\n\r\n\0\r\nQUIT\n`: no TLS record and no frame starts this way.
    public static let signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    /// Signature, version and command, family and protocol, length.
    static let fixedLength = 16
    /// The most a header may be: the spec's bound for what a receiver must take
    /// (Unix-socket addresses are the largest), TLVs included; more is refused unread.
    public static let maximumLength = 536

    public enum Result: Sendable, Hashable {
        case needMoreData
        /// The header, and how many bytes it took: what follows is the client's.
        case header(ProxyHeader, length: Int)
        case invalid(ProxyHeaderProblem)
    }

    /// Judges `bytes`, the connection's first bytes (all of them so far).
    public static func decode(_ bytes: some Collection<UInt8>) -> Result {
        var iterator = bytes.makeIterator()
        var head: [UInt8] = []
        head.reserveCapacity(fixedLength)
        while head.count < fixedLength, let byte = iterator.next() { head.append(byte) }
        // Checked as far as the bytes go, so a stranger is refused at its first byte, not after 16.
        for (byte, expected) in zip(head, signature) where byte != expected { return .invalid(.signature) }
        guard head.count == fixedLength else { return .needMoreData }
        guard head[12] >> 4 == 2 else { return .invalid(.version(head[12] >> 4)) }
        let command = head[12] & 0x0F
        guard command <= 1 else { return .invalid(.command(command)) }
        let declared = Int(head[14]) << 8 | Int(head[15])
        let length = fixedLength + declared
        guard length <= maximumLength else { return .invalid(.oversized(length)) }
        guard bytes.count >= length else { return .needMoreData }
        // LOCAL: the balancer speaks for itself (a health check); whatever it says of addresses is ignored.
        guard command == 1 else { return .header(.local, length: length) }
        let family = head[13] >> 4, transport = head[13] & 0x0F
        // UNSPEC: the balancer could not say who the client is; the spec has the receiver ignore the addresses.
        guard family != 0 else { return .header(.local, length: length) }
        guard transport == 1, family == 1 || family == 2 else { return .invalid(.unsupportedFamily(head[13])) }
        let addressLength = family == 1 ? 12 : 36
        guard declared >= addressLength else { return .invalid(.shortAddresses(declared)) }
        // Only the addresses are read; TLVs after them are skipped (the length covers them).
        let block = Array(bytes.dropFirst(fixedLength).prefix(addressLength))
        let source: IPAddress
        let destination: IPAddress
        if family == 1 {
            source = .v4(IPv4Address(rawValue: Self.integer(block[0..<4])))
            destination = .v4(IPv4Address(rawValue: Self.integer(block[4..<8])))
        } else {
            source = .v6(IPv6Address(rawValue: Self.integer(block[0..<16])))
            destination = .v6(IPv6Address(rawValue: Self.integer(block[16..<32])))
        }
        let ports = block.suffix(4)
        let sourcePort = UInt16(ports[ports.startIndex]) << 8 | UInt16(ports[ports.startIndex + 1])
        let destinationPort = UInt16(ports[ports.startIndex + 2]) << 8 | UInt16(ports[ports.startIndex + 3])
        return .header(.proxied(source: source, sourcePort: sourcePort, destination: destination, destinationPort: destinationPort), length: length)
    }

    private static func integer<Value: FixedWidthInteger & UnsignedInteger>(_ bytes: ArraySlice<UInt8>) -> Value {
        bytes.reduce(Value.zero) { $0 << 8 | Value($1) }
    }
}

/// What a balancer's header says.
public enum ProxyHeader: Sendable, Hashable {
    /// The balancer's own connection (a health check, or a client it cannot name): its address stands.
    case local
    /// A TCP client the balancer accepted, and the address it reached.
    case proxied(source: IPAddress, sourcePort: UInt16, destination: IPAddress, destinationPort: UInt16)
}

/// Why the first bytes of a balancer's connection are no header we take; completes "…: ".
public enum ProxyHeaderProblem: Error, Sendable, Hashable, CustomStringConvertible {
    case signature
    case version(UInt8)
    case command(UInt8)
    case unsupportedFamily(UInt8)
    case shortAddresses(Int)
    case oversized(Int)

    public var description: String {
        switch self {
        case .signature:
            return "no PROXY protocol v2 signature (is the balancer set to send-proxy-v2, and is this address a balancer?)"
        case .version(let version): return "PROXY protocol version \(version), expected 2 (send-proxy-v2, not send-proxy)"
        case .command(let command): return "PROXY protocol command \(command), expected LOCAL (0) or PROXY (1)"
        case .unsupportedFamily(let byte): return "address family and protocol 0x\(String(byte, radix: 16)): only TCP over IPv4 or IPv6 is served"
        case .shortAddresses(let length): return "an address block of \(length) bytes is too short for its family"
        case .oversized(let length): return "a header of \(length) bytes, more than the \(ProxyHeaderDecoder.maximumLength) taken"
        }
    }
}
