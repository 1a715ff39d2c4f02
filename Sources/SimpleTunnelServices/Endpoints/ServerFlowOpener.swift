import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Opens the server's end of each flow a client asks for: resolves and connects
/// TCP destinations (answering with the result codes of PROTOCOL.md A4) and
/// binds UDP sockets. Everything happens on the tunnel's event loop.
public final class ServerFlowOpener: FlowOpener {
    public struct Settings: Sendable {
        public var connectTimeout: TimeAmount = .seconds(10)
        public var authorizer: any DestinationAuthorizer = AllowAllDestinations()
        public var resolver: any NameResolver = HostResolver()
        /// Addresses of one name tried before giving up.
        public var maximumConnectAttempts = 4
        /// Nil when the IP layer is off: IP opens then get result 5.
        public var ipLayer: ServerIPLayer?

        public init() {}
    }

    private let eventLoop: EventLoop
    private let settings: Settings
    /// The client, for its durable lease; nil in tests of the other flow kinds.
    private let peer: TunnelPeer?
    private let logger: Logger

    public init(eventLoop: EventLoop, settings: Settings, peer: TunnelPeer? = nil, logger: Logger) {
        self.eventLoop = eventLoop
        self.peer = peer
        self.settings = settings
        self.logger = logger
    }

    public func open(
        _ request: TunnelOpenRequest,
        identifier: TunnelConnectionIdentifier,
        sink: FlowEventSink,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        switch request {
        case .tcp(let destination):
            connect(to: destination, identifier: identifier, sink: sink, completion: completion)
        case .udp:
            let endpoint = DatagramFlowEndpoint(
                identifier: identifier, sink: sink, eventLoop: eventLoop,
                resolver: settings.resolver, authorizer: settings.authorizer, logger: logger
            )
            completion(.success(OpenedFlow(endpoint: endpoint)))
        case .ip:
            guard let ipLayer = settings.ipLayer else {
                return completion(.failure(FlowOpenFailure(.internalError, "the IP layer is off on this server")))
            }
            completion(ipLayer.open(identifier: identifier, peer: peer, sink: sink, eventLoop: eventLoop, logger: logger))
        }
    }

    // MARK: TCP

    private func connect(
        to destination: TunnelEndpoint,
        identifier: TunnelConnectionIdentifier,
        sink: FlowEventSink,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        if let refusal = settings.authorizer.refusal(forHost: destination.host, port: destination.port) {
            return completion(.failure(FlowOpenFailure(.refused, refusal)))
        }
        settings.resolver.resolve(host: destination.host, port: destination.port, kind: .stream, on: eventLoop)
            .assumeIsolated()
            .whenComplete { [self] result in
                switch result {
                case .failure(let error):
                    completion(.failure(FlowOpenFailure(.noSuchHost, String(describing: error))))
                case .success(let addresses):
                    var refusals: [String] = []
                    let allowed = addresses.filter { address in
                        guard let refusal = settings.authorizer.refusal(forAddress: address, requestedHost: destination.host) else {
                            return true
                        }
                        refusals.append(refusal)
                        return false
                    }
                    guard !allowed.isEmpty else {
                        return completion(.failure(FlowOpenFailure(.refused, refusals.first ?? "not allowed by policy")))
                    }
                    attempt(Array(allowed.prefix(settings.maximumConnectAttempts))[...], failures: [], identifier: identifier, sink: sink, completion: completion)
                }
            }
    }

    /// Tries each address in turn; the first connection wins.
    private func attempt(
        _ addresses: ArraySlice<SocketAddress>,
        failures: [FlowOpenFailure],
        identifier: TunnelConnectionIdentifier,
        sink: FlowEventSink,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        guard let address = addresses.first else {
            return completion(.failure(Self.mostTelling(failures)))
        }
        let endpoint = StreamFlowEndpoint(identifier: identifier, sink: sink)
        // The connection lives on the tunnel's event loop, where the handler was made.
        let boundEndpoint = NIOLoopBound(endpoint, eventLoop: eventLoop)
        ClientBootstrap(group: eventLoop)
            .connectTimeout(settings.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try FlowSocketOptions.apply(to: channel)
                    try channel.pipeline.syncOperations.addHandler(boundEndpoint.value)
                }
            }
            .connect(to: address)
            .assumeIsolated()
            .whenComplete { [self] result in
                switch result {
                case .success:
                    completion(.success(OpenedFlow(endpoint: endpoint)))
                case .failure(let error):
                    let failure = Self.classify(error, address: address)
                    logger.debug("connect attempt failed", metadata: ["flow": "\(identifier)", "reason": "\(failure.reason)"])
                    attempt(addresses.dropFirst(), failures: failures + [failure], identifier: identifier, sink: sink, completion: completion)
                }
            }
    }

    /// Maps a connect error to its result code (PROTOCOL.md A4).
    static func classify(_ error: Error, address: SocketAddress) -> FlowOpenFailure {
        // host:port as a user writes it, not SocketAddress's "[IPv4]name/address:port".
        let target = TunnelEndpoint(address)
        if let channelError = error as? ChannelError, case .connectTimeout = channelError {
            return FlowOpenFailure(.timeout, "connecting to \(target) timed out")
        }
        if let ioError = error as? IOError, ioError.errnoCode == ECONNREFUSED {
            return FlowOpenFailure(.refused, "\(target) refused the connection")
        }
        if let connectionError = error as? NIOConnectionError {
            for attempt in connectionError.connectionErrors {
                return classify(attempt.error, address: attempt.target)
            }
        }
        return FlowOpenFailure(.internalError, "connecting to \(target) failed: \(error)")
    }

    /// Of several failed attempts, the one that says most: refused, then timed out.
    static func mostTelling(_ failures: [FlowOpenFailure]) -> FlowOpenFailure {
        failures.first { $0.result == .refused }
            ?? failures.first { $0.result == .timeout }
            ?? failures.last
            ?? FlowOpenFailure(.internalError, "no address to connect to")
    }
}
