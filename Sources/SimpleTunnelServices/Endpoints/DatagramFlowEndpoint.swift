import Logging
import NIOCore
import NIOPosix

/// The server's end of a UDP flow (PROTOCOL.md A4): one socket per address
/// family, bound on first use. Each datagram from the peer names its
/// destination; each datagram that comes back is reported with its source.
/// Names are resolved per destination (and remembered briefly); destinations
/// the policy refuses are dropped and logged.
public final class DatagramFlowEndpoint: DataFlowEndpoint {
    private let reporter: FlowReporter
    private let eventLoop: EventLoop
    private let resolver: any NameResolver
    private let authorizer: any DestinationAuthorizer
    /// The tunnel's flow sockets, each bound socket counted until it is closed.
    private let socketAccount: FlowSocketAccount?
    private let logger: Logger
    /// Drops happen per datagram, as fast as a peer sends them.
    private var dropLog = LineRateLimiter()

    private var sockets: [AddressFamily: DatagramSocket] = [:]
    private var names = DatagramNameTable()
    private var readingEnabled = false
    private var closed = false

    /// Datagrams waiting for a socket, beyond which new ones are dropped.
    static let maximumWaiting = 64

    enum AddressFamily: Hashable {
        case v4, v6
    }

    init(
        reporter: FlowReporter,
        eventLoop: EventLoop,
        resolver: any NameResolver,
        authorizer: any DestinationAuthorizer,
        sockets: FlowSocketAccount? = nil,
        logger: Logger
    ) {
        self.reporter = reporter
        self.eventLoop = eventLoop
        self.resolver = resolver
        self.authorizer = authorizer
        self.socketAccount = sockets
        self.logger = logger
    }

    // MARK: DataFlowEndpoint

    public func write(_ data: ByteBuffer, to destination: TunnelEndpoint?) {
        guard !closed, let destination else { return }
        if let refusal = authorizer.refusal(forHost: destination.host, port: destination.port) {
            return drop(destination, reason: refusal)
        }
        if let literal = try? SocketAddress(ipAddress: TunnelEndpoint.unbracketed(destination.host), port: destination.port) {
            return send(data, to: literal, requestedHost: destination.host)
        }
        let name = DatagramNameTable.Name(destination)
        switch names.admit(data, to: name, now: .now()) {
        case .send(let address):
            send(data, to: address, requestedHost: destination.host)
        case .wait, .dropUnreported:
            break
        case .drop(let reason):
            drop(destination, reason: reason)
        case .lookUp:
            resolve(name, destination: destination)
        }
    }

    /// Looks `name` up once for every datagram that waits for it.
    private func resolve(_ name: DatagramNameTable.Name, destination: TunnelEndpoint) {
        resolver.resolve(host: destination.host, port: destination.port, kind: .datagram, on: eventLoop)
            .assumeIsolated()
            .whenComplete { [weak self] result in
                guard let self, !self.closed else { return }
                switch result {
                case .success(let addresses):
                    guard let address = addresses.first else {
                        let dropped = self.names.lookupFailed(name)
                        return self.drop(destination, reason: "the name resolved to no address", count: dropped)
                    }
                    for datagram in self.names.lookupSucceeded(name, address: address, now: .now()) {
                        self.send(datagram, to: address, requestedHost: destination.host)
                    }
                    // The multiplexer flushed when the datagrams arrived, before they could be sent.
                    self.flush()
                case .failure(let error):
                    let dropped = self.names.lookupFailed(name)
                    self.drop(destination, reason: String(describing: error), count: dropped)
                }
            }
    }

    public func flush() {
        for socket in sockets.values {
            socket.channel?.flush()
        }
    }

    public func setReading(_ enabled: Bool) {
        readingEnabled = enabled
        for socket in sockets.values {
            socket.gate?.setReading(enabled)
        }
    }

    public func close() {
        guard !closed else { return }
        closed = true
        for socket in sockets.values {
            socket.channel?.close(promise: nil)
        }
        sockets.removeAll()
    }

    // MARK: Sockets

    private func send(_ data: ByteBuffer, to address: SocketAddress, requestedHost: String) {
        if let refusal = authorizer.refusal(forAddress: address, requestedHost: requestedHost) {
            return drop(TunnelEndpoint(host: requestedHost, port: address.port ?? 0), reason: refusal)
        }
        let family: AddressFamily = address.protocol == .inet6 ? .v6 : .v4
        let socket: DatagramSocket
        if let existing = sockets[family] {
            socket = existing
        } else {
            switch bind(family) {
            case .success(let bound): socket = bound
            case .failure(let refusal): return drop(TunnelEndpoint(host: requestedHost, port: address.port ?? 0), reason: refusal.description)
            }
        }
        if let channel = socket.channel {
            channel.write(AddressedEnvelope(remoteAddress: address, data: data), promise: nil)
        } else if socket.waiting.count < Self.maximumWaiting {
            socket.waiting.append(AddressedEnvelope(remoteAddress: address, data: data))
        }
    }

    private func bind(_ family: AddressFamily) -> Result<DatagramSocket, FlowSocketRefusal> {
        var ticket: FlowSocketTicket?
        if let socketAccount {
            switch socketAccount.acquire() {
            case .success(let granted): ticket = granted
            case .failure(let refusal): return .failure(refusal)
            }
        }
        let socket = DatagramSocket()
        sockets[family] = socket
        let gate = DatagramReadGate(reporter: reporter, reading: readingEnabled)
        socket.gate = gate
        let boundGate = NIOLoopBound(gate, eventLoop: eventLoop)
        DatagramBootstrap(group: eventLoop).readingWholeDatagrams()
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(boundGate.value)
                }
            }
            .bind(host: family == .v6 ? "::" : "0.0.0.0", port: 0)
            .assumeIsolated()
            .whenComplete { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let channel):
                    ticket?.release(whenClosed: channel)
                    guard !self.closed else {
                        channel.close(promise: nil)
                        return
                    }
                    socket.channel = channel
                    for envelope in socket.waiting {
                        channel.write(envelope, promise: nil)
                    }
                    socket.waiting.removeAll()
                    channel.flush()
                case .failure(let error):
                    ticket?.release()
                    self.logger.notice("cannot bind a UDP socket", metadata: ["flow": "\(self.reporter.identifier)", "reason": "\(error)"])
                    socket.waiting.removeAll()
                    // Forgotten, so the next datagram of this family tries again instead of waiting forever.
                    if self.sockets[family] === socket { self.sockets[family] = nil }
                }
            }
        return .success(socket)
    }

    private func drop(_ destination: TunnelEndpoint, reason: String, count: Int = 1) {
        guard let unlogged = dropLog.admit() else { return }
        var metadata: Logger.Metadata = ["flow": "\(reporter.identifier)", "destination": "\(destination)", "reason": "\(reason)"]
        if count != 1 {
            metadata["datagrams"] = "\(count)"
        }
        if unlogged > 0 {
            metadata["unlogged"] = "\(unlogged)"
        }
        logger.notice("dropping datagram", metadata: metadata)
    }
}

/// One bound UDP socket of a flow and what waits for it.
private final class DatagramSocket {
    var channel: Channel?
    var gate: DatagramReadGate?
    var waiting: [AddressedEnvelope<ByteBuffer>] = []
}

/// Reports a UDP socket's datagrams to the flow, reading only while allowed.
final class DatagramReadGate: ChannelDuplexHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundIn = AddressedEnvelope<ByteBuffer>

    private let reporter: FlowReporter
    private var reading: Bool
    private var readPending = false
    private var context: ChannelHandlerContext?

    init(reporter: FlowReporter, reading: Bool) {
        self.reporter = reporter
        self.reading = reading
    }

    func setReading(_ enabled: Bool) {
        reading = enabled
        if enabled, readPending, let context {
            readPending = false
            context.read()
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func read(context: ChannelHandlerContext) {
        if reading {
            context.read()
        } else {
            readPending = true
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        reporter.didRead(envelope.data, from: TunnelEndpoint(envelope.remoteAddress))
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // ICMP errors (port unreachable) surface here; UDP carries on.
    }
}

extension TunnelEndpoint {
    /// The plain form of a socket address: IPv4-mapped IPv6 written as IPv4 (PROTOCOL.md A6).
    public init(_ address: SocketAddress) {
        if case .v6 = address, case .v4(let mapped)? = IPAddress(address)?.unmapped {
            self.init(host: mapped.description, port: address.port ?? 0)
        } else {
            self.init(host: address.ipAddress ?? "", port: address.port ?? 0)
        }
    }
}

extension DatagramBootstrap {
    /// Reads whole datagrams: NIO's default 2 KiB buffer would truncate them,
    /// and a UDP datagram of up to 65507 bytes is carried whole (PROTOCOL.md A6).
    func readingWholeDatagrams() -> DatagramBootstrap {
        channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
    }
}
