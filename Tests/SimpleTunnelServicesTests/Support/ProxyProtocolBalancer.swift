import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import SimpleTunnelServices

/// PROXY v2 headers as a balancer writes them (haproxy's send-proxy-v2).
enum ProxyHeaderBytes {
    static func proxied(source: IPAddress, sourcePort: UInt16, destination: IPAddress, destinationPort: UInt16, tlvs: [UInt8] = []) -> [UInt8] {
        var addresses: [UInt8] = []
        let family: UInt8
        switch (source, destination) {
        case (.v4(let from), .v4(let to)):
            family = 0x11
            addresses = bytes(UInt128(from.rawValue), count: 4) + bytes(UInt128(to.rawValue), count: 4)
        case (.v6(let from), .v6(let to)):
            family = 0x21
            addresses = bytes(from.rawValue, count: 16) + bytes(to.rawValue, count: 16)
        default:
            preconditionFailure("one family for both addresses")
        }
        addresses += bytes(UInt128(sourcePort), count: 2) + bytes(UInt128(destinationPort), count: 2)
        return header(command: 0x21, family: family, body: addresses + tlvs)
    }

    /// A health check's header: the balancer speaks for itself.
    static func local(body: [UInt8] = []) -> [UInt8] {
        header(command: 0x20, family: 0x00, body: body)
    }

    static func header(command: UInt8, family: UInt8, body: [UInt8]) -> [UInt8] {
        ProxyHeaderDecoder.signature + [command, family] + bytes(UInt128(body.count), count: 2) + body
    }

    private static func bytes(_ value: UInt128, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * (count - 1 - $0))) }
    }
}

/// A load balancer on loopback: each connection it accepts goes to the
/// backend from 127.0.0.1, headed by a PROXY v2 header naming whichever
/// client `source` says now (nil: LOCAL), then relayed both ways.
final class ProxyProtocolBalancer: Sendable {
    let channel: Channel
    private let source: NIOLockedValueBox<(address: IPAddress, port: UInt16)?>

    var port: Int { channel.localAddress?.port ?? 0 }

    private init(channel: Channel, source: NIOLockedValueBox<(address: IPAddress, port: UInt16)?>) {
        self.channel = channel
        self.source = source
    }

    /// The client the next connections are said to come from; nil: none (LOCAL, as a health check).
    func pretend(_ address: String?, port: UInt16 = 0) {
        source.withLockedValue { $0 = address.map { (IPAddress($0)!, port) } }
    }

    static func start(backendPort: Int, group: EventLoopGroup) async throws -> ProxyProtocolBalancer {
        let source = NIOLockedValueBox<(address: IPAddress, port: UInt16)?>(nil)
        let channel = try await ServerBootstrap(group: group)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                let header: [UInt8]
                if let (address, port) = source.withLockedValue({ $0 }) {
                    let destination: IPAddress = if case .v4 = address { .v4(IPv4Address(127, 0, 0, 1)) } else { .v6(IPv6Address("::1")!) }
                    header = ProxyHeaderBytes.proxied(source: address, sourcePort: port, destination: destination, destinationPort: UInt16(backendPort))
                } else {
                    header = ProxyHeaderBytes.local()
                }
                let (front, back) = TestSocketGlue.pair()
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelInitializer { outbound in
                        outbound.eventLoop.makeCompletedFuture { try outbound.pipeline.syncOperations.addHandler(back) }
                    }
                    .connect(host: "127.0.0.1", port: backendPort)
                    .flatMap { outbound in
                        outbound.writeAndFlush(ByteBuffer(bytes: header)).flatMap {
                            inbound.eventLoop.makeCompletedFuture {
                                try inbound.pipeline.syncOperations.addHandler(front)
                            }.flatMap { inbound.setOption(.autoRead, value: true) }
                        }
                    }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return ProxyProtocolBalancer(channel: channel, source: source)
    }

    func stop() async {
        try? await channel.close()
    }
}
