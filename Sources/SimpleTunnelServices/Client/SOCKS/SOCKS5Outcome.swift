import NIOCore

/// How a request ended, as the reply tells the client: REP and BND.ADDR/PORT.
/// For CONNECT the bound address may be anything (clients ignore it; the real
/// one is on the tunnel server); for UDP ASSOCIATE it must be the address of
/// the relay's UDP socket, where the client will send its datagrams.
public struct SOCKS5Outcome: Sendable, Hashable {
    public let reply: SOCKS5ReplyCode
    let wireBoundAddress: SOCKS5Address

    /// BND.ADDR and BND.PORT as an endpoint.
    public var boundAddress: TunnelEndpoint { wireBoundAddress.endpoint }

    /// A reply bound to a socket's address; nil (or a Unix socket) is sent as
    /// 0.0.0.0:0.
    public init(reply: SOCKS5ReplyCode, boundAddress: SocketAddress?) {
        self.reply = reply
        self.wireBoundAddress = SOCKS5Address(boundAddress)
    }

    /// A reply bound to an endpoint; throws if the host or port has no SOCKS5
    /// form (a name over 255 bytes, a port over 65535).
    public init(reply: SOCKS5ReplyCode, boundAddress: TunnelEndpoint) throws(SOCKS5Error) {
        self.reply = reply
        self.wireBoundAddress = try SOCKS5Address(boundAddress)
    }

    /// The reply for a tunnel server's `openResult`.
    public init(_ result: TunnelConnectionOpenResult, boundAddress: SocketAddress?) {
        self.init(reply: SOCKS5ReplyCode(result), boundAddress: boundAddress)
    }

    /// The failure reply for a flow the tunnel server could not open.
    public static func failure(_ failure: FlowOpenFailure) -> SOCKS5Outcome {
        SOCKS5Outcome(reply: SOCKS5ReplyCode(failure.result, detail: failure.detail), boundAddress: nil)
    }

    /// A success reply bound to a socket's address (nil: 0.0.0.0:0).
    public static func succeeded(boundAddress: SocketAddress?) -> SOCKS5Outcome {
        SOCKS5Outcome(reply: .succeeded, boundAddress: boundAddress)
    }

    /// A failure reply; RFC 1928 leaves BND meaningless there, so 0.0.0.0:0.
    public static func failure(_ reply: SOCKS5ReplyCode) -> SOCKS5Outcome {
        SOCKS5Outcome(reply: reply, boundAddress: nil)
    }

    /// VER REP RSV ATYP BND.ADDR BND.PORT.
    func encoded() -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(6 + wireBoundAddress.addressBytes.count + 1)
        buffer.writeInteger(SOCKS5Wire.version)
        buffer.writeInteger(reply.rawValue)
        buffer.writeInteger(UInt8(0))
        wireBoundAddress.write(into: &buffer)
        return buffer
    }
}
