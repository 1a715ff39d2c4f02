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
        /// Flow sockets of every tunnel: one budget that all openers made
        /// from these settings share (a reference).
        public var socketBudget = FlowSocketBudget.forCurrentProcess()
        /// How long a closed TCP flow's unsent data may drain before its socket is reset.
        public var drainTimeout = StreamFlowEndpoint.defaultDrainTimeout

        public init() {}
    }

    private let eventLoop: EventLoop
    private let settings: Settings
    /// Nil when the IP layer is off: IP opens then get result 5.
    private let ipFlows: (any IPFlowOpening)?
    private let logger: Logger
    /// This tunnel's flow sockets; they count until closed, even after the tunnel.
    private let sockets: FlowSocketAccount
    /// Why this tunnel may not open TCP and UDP flows now (its login's groups, or the server's setting); nil: it may.
    private let appLayerRefusal: @Sendable () -> String?

    public init(
        eventLoop: EventLoop, settings: Settings, ipFlows: (any IPFlowOpening)? = nil, appLayerRefusal: @escaping @Sendable () -> String? = { nil },
        logger: Logger
    ) {
        self.eventLoop = eventLoop
        self.appLayerRefusal = appLayerRefusal
        self.ipFlows = ipFlows
        self.settings = settings
        self.logger = logger
        self.sockets = settings.socketBudget.makeAccount()
    }

    public func open(
        _ request: TunnelOpenRequest,
        reporter: FlowReporter,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        switch request {
        case .tcp, .udp:
            // Refused as the policy refuses a destination, so a SOCKS client hears "not allowed by ruleset".
            if let refusal = appLayerRefusal() {
                return completion(.failure(FlowOpenFailure(.refused, refusal, detail: .notAllowedByPolicy)))
            }
        case .ip:
            break
        }
        switch request {
        case .tcp(let destination):
            connect(to: destination, reporter: reporter, completion: completion)
        case .udp:
            // Its sockets are bound (and counted) on first use; refused now if none could be.
            if let refusal = sockets.refusal() {
                return refuse(refusal, completion: completion)
            }
            let endpoint = DatagramFlowEndpoint(
                reporter: reporter, eventLoop: eventLoop,
                resolver: settings.resolver, authorizer: settings.authorizer, sockets: sockets, logger: logger
            )
            completion(.success(OpenedFlow(endpoint: .udp(endpoint))))
        case .ip(let offersSuperPackets):
            guard let ipFlows else {
                return completion(.failure(FlowOpenFailure(.internalError, "the IP layer is off on this server")))
            }
            ipFlows.openIPFlow(
                reporter: reporter, offersSuperPackets: offersSuperPackets, eventLoop: eventLoop, logger: logger, completion: completion)
        }
    }

    /// Answers `.refused` for want of sockets, logging it now and then: a peer
    /// can ask for flows as fast as it can write.
    private func refuse(_ refusal: FlowSocketRefusal, completion: (Result<OpenedFlow, FlowOpenFailure>) -> Void) {
        if let unlogged = settings.socketBudget.admitRefusalLog() {
            logger.notice(
                "refusing flows",
                metadata: ["reason": "\(refusal)", "sockets": "\(settings.socketBudget.socketsInUse)", "unlogged": "\(unlogged)"])
        }
        completion(.failure(FlowOpenFailure(.refused, refusal.description)))
    }

    // MARK: TCP

    private func connect(
        to destination: TunnelEndpoint,
        reporter: FlowReporter,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        if let refusal = settings.authorizer.refusal(forHost: destination.host, port: destination.port) {
            return completion(.failure(FlowOpenFailure(.refused, refusal, detail: .notAllowedByPolicy)))
        }
        // Counted from here: a connect in progress holds a descriptor too.
        let ticket: FlowSocketTicket
        switch sockets.acquire() {
        case .success(let granted): ticket = granted
        case .failure(let refusal): return refuse(refusal, completion: completion)
        }
        let completion = { (result: Result<OpenedFlow, FlowOpenFailure>) in
            if case .failure = result { ticket.release() }
            completion(result)
        }
        // A literal (most flows) goes straight on: a resolved future and its callback cost every flow.
        if let addresses = settings.resolver.immediateAddresses(host: destination.host, port: destination.port) {
            return resolved(.success(addresses), destination: destination, reporter: reporter, ticket: ticket, completion: completion)
        }
        settings.resolver.resolve(host: destination.host, port: destination.port, kind: .stream, on: eventLoop)
            .assumeIsolated()
            .whenComplete { [self] result in
                resolved(result, destination: destination, reporter: reporter, ticket: ticket, completion: completion)
            }
    }

    /// Connects to the addresses the policy allows of those `destination` resolved to.
    private func resolved(
        _ result: Result<[SocketAddress], any Error>,
        destination: TunnelEndpoint,
        reporter: FlowReporter,
        ticket: FlowSocketTicket,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        switch result {
        case .failure(let error):
            completion(.failure(FlowOpenFailure(.noSuchHost, String(describing: error))))
        case .success(let addresses):
            switch Self.allowed(addresses, requestedHost: destination.host, by: settings.authorizer) {
            case .failure(let refusal):
                completion(.failure(FlowOpenFailure(.refused, refusal.reason, detail: .notAllowedByPolicy)))
            case .success(let allowed):
                attempt(allowed.prefix(settings.maximumConnectAttempts), failures: [], reporter: reporter, ticket: ticket, completion: completion)
            }
        }
    }

    /// The addresses the policy allows, in order; when it allows none, the
    /// first refusal. Nothing is copied while every address is allowed (nearly always).
    static func allowed(
        _ addresses: [SocketAddress], requestedHost: String, by authorizer: any DestinationAuthorizer
    ) -> Result<ArraySlice<SocketAddress>, AddressRefusal> {
        var kept: [SocketAddress]?
        var firstRefusal: String?
        for (index, address) in addresses.enumerated() {
            if let refusal = authorizer.refusal(forAddress: address, requestedHost: requestedHost) {
                if kept == nil { kept = Array(addresses[..<index]) }
                if firstRefusal == nil { firstRefusal = refusal }
            } else if kept != nil {
                kept?.append(address)
            }
        }
        let allowed = kept.map { $0[...] } ?? addresses[...]
        guard !allowed.isEmpty else { return .failure(AddressRefusal(reason: firstRefusal ?? "not allowed by policy")) }
        return .success(allowed)
    }

    /// Why no address of a destination may be connected to.
    struct AddressRefusal: Error, Equatable {
        let reason: String
    }

    /// Tries each address in turn, one socket at a time; the first connection
    /// wins and releases `ticket` once its socket is closed.
    private func attempt(
        _ addresses: ArraySlice<SocketAddress>,
        failures: [FlowOpenFailure],
        reporter: FlowReporter,
        ticket: FlowSocketTicket,
        completion: @escaping (Result<OpenedFlow, FlowOpenFailure>) -> Void
    ) {
        guard let address = addresses.first else {
            return completion(.failure(Self.mostTelling(failures)))
        }
        let endpoint = StreamFlowEndpoint(reporter: reporter, drainTimeout: settings.drainTimeout)
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
                case .success(let channel):
                    ticket.release(whenClosed: channel)
                    completion(.success(OpenedFlow(endpoint: .tcp(endpoint))))
                case .failure(let error):
                    let failure = Self.classify(error, address: address)
                    logger.debug("connect attempt failed", metadata: ["flow": "\(reporter.identifier)", "reason": "\(failure.reason)"])
                    attempt(
                        addresses.dropFirst(), failures: failures + [failure], reporter: reporter, ticket: ticket,
                        completion: completion)
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
        if let ioError = error as? IOError {
            switch ioError.errnoCode {
            case ECONNREFUSED: return FlowOpenFailure(.refused, "\(target) refused the connection")
            case ENETUNREACH: return FlowOpenFailure(.internalError, "no route to the network of \(target)", detail: .networkUnreachable)
            case EHOSTUNREACH: return FlowOpenFailure(.internalError, "\(target) is unreachable", detail: .hostUnreachable)
            default: break
            }
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
