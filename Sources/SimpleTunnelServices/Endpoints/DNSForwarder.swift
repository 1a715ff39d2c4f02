import Logging
import NIOCore
import NIOPosix

/// Forwards a client's DNS query over UDP to a resolver and returns the first
/// answer with the same transaction id (PROTOCOL.md B3). One short-lived
/// socket per query, on the tunnel's event loop; a query unanswered within the
/// timeout fails.
public struct DNSForwarder: Sendable {
    public enum Failure: Error, CustomStringConvertible {
        case noResolver
        case timedOut(SocketAddress)
        case malformedQuery
        case tooManyQueries(Int)
        case noSocket(String)

        public var description: String {
            switch self {
            case .noSocket(let reason): return "no socket for the query: \(reason)"
            case .tooManyQueries(let limit): return "\(limit) DNS queries of this tunnel are already waiting for the resolver"
            case .noResolver: return "no DNS resolver is configured on the server"
            case .timedOut(let resolver): return "the resolver \(TunnelEndpoint(resolver)) did not answer in time"
            case .malformedQuery: return "the DNS query is shorter than a DNS header"
            }
        }
    }

    public var resolver: SocketAddress?
    public var timeout: TimeAmount
    /// Each query's socket counts against the server's flow sockets (every
    /// tunnel may have 64 queries waiting); nil counts nothing.
    public var sockets: FlowSocketAccount?

    public init(resolver: SocketAddress?, timeout: TimeAmount = .seconds(5), sockets: FlowSocketAccount? = nil) {
        self.resolver = resolver
        self.timeout = timeout
        self.sockets = sockets
    }

    /// The first `nameserver` of resolv.conf text, port 53.
    public static func firstNameserver(inResolvConf text: String) -> SocketAddress? {
        for line in text.split(whereSeparator: \.isNewline) {
            let fields = line.split(whereSeparator: \.isWhitespace)
            if fields.count >= 2, fields[0] == "nameserver",
                let address = try? SocketAddress(ipAddress: String(fields[1].split(separator: "%")[0]), port: 53)
            {
                return address
            }
        }
        return nil
    }

    public func forward(_ query: ByteBuffer, on eventLoop: EventLoop) -> EventLoopFuture<(answer: ByteBuffer, source: String)> {
        guard let resolver else { return eventLoop.makeFailedFuture(Failure.noResolver) }
        guard let transaction = query.getInteger(at: query.readerIndex, as: UInt16.self) else {
            return eventLoop.makeFailedFuture(Failure.malformedQuery)
        }
        var ticket: FlowSocketTicket?
        if let sockets {
            switch sockets.acquire() {
            case .success(let granted): ticket = granted
            case .failure(let refusal): return eventLoop.makeFailedFuture(Failure.noSocket(refusal.description))
            }
        }
        let promise = eventLoop.makePromise(of: ByteBuffer.self)
        let source = TunnelEndpoint(resolver).description
        DatagramBootstrap(group: eventLoop).readingWholeDatagrams()
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DNSAnswerHandler(transaction: transaction, promise: promise))
                }
            }
            .connect(to: resolver)
            .whenComplete { [ticket] result in
                switch result {
                case .success(let channel):
                    ticket?.release(whenClosed: channel)
                    channel.writeAndFlush(AddressedEnvelope(remoteAddress: resolver, data: query), promise: nil)
                    let timer = channel.eventLoop.scheduleTask(in: timeout) {
                        promise.fail(Failure.timedOut(resolver))
                    }
                    promise.futureResult.whenComplete { _ in
                        timer.cancel()
                        channel.close(promise: nil)
                    }
                case .failure(let error):
                    ticket?.release()
                    promise.fail(error)
                }
            }
        return promise.futureResult.map { (answer: $0, source: source) }
    }
}

/// Completes the query's promise with the first datagram whose transaction id matches.
private final class DNSAnswerHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let transaction: UInt16
    private let promise: EventLoopPromise<ByteBuffer>

    init(transaction: UInt16, promise: EventLoopPromise<ByteBuffer>) {
        self.transaction = transaction
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard envelope.data.getInteger(at: envelope.data.readerIndex, as: UInt16.self) == transaction else { return }
        promise.succeed(envelope.data)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // Port unreachable and the like: keep waiting until the timeout.
    }
}
