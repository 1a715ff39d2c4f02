import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// A client's tunnel to a server: the TCP (and TLS) connection, its
/// multiplexer in the client role, and the server's configuration, fetched
/// right after connecting (so an idle client is never cut off, PROTOCOL.md B5).
///
/// Local listeners that feed flows into the tunnel run on `eventLoop`, the
/// tunnel's own, so that all of a tunnel's state stays on one thread.
public final class TunnelClientConnection: Sendable {
    public struct Settings: Sendable {
        public var host: String
        public var port: Int
        /// Nil for `--plaintext`.
        public var tls: TLSContext?
        /// The name to verify and send as SNI; defaults to `host`.
        public var serverName: String?
        public var limits = TunnelMultiplexer.Limits()
        public var connectTimeout: TimeAmount = .seconds(10)
        /// Keepalive probes that find a dead server (and measure the round trip).
        public var liveness = LivenessMonitor.Policy.client
        /// Login and password for servers that require them (PROTOCOL.md B2).
        public var credentials: (login: String, password: String)?
        /// SO_MARK for the tunnel's socket, which the kill switch lets out (`KillSwitchRules.socketMark`).
        public var socketMark: UInt32?
        /// Looks up `host`; nil: the system's resolver. (For tests: a name that resolves only once.)
        public var resolver: (@Sendable (EventLoop) -> any Resolver & Sendable)?

        public init(host: String, port: Int, tls: TLSContext?) {
            self.host = host
            self.port = port
            self.tls = tls
        }
    }

    public let channel: Channel
    /// Where the server was reached, taken once the connection was up: SwiftNIO
    /// forgets `channel.remoteAddress` when the channel closes, and a
    /// reconnection must go back here rather than look the name up through a
    /// full tunnel's DNS, which is out of reach while the tunnel is down.
    public let serverAddress: SocketAddress?
    public var eventLoop: EventLoop { channel.eventLoop }
    /// The server's configuration as fetched when the tunnel came up.
    public let serverConfiguration: [String: PropertyListValue]
    private let multiplexerBox: NIOLoopBound<TunnelMultiplexer>

    private init(
        channel: Channel, serverAddress: SocketAddress?, multiplexer: NIOLoopBound<TunnelMultiplexer>, serverConfiguration: [String: PropertyListValue]
    ) {
        self.channel = channel
        self.serverAddress = serverAddress
        self.multiplexerBox = multiplexer
        self.serverConfiguration = serverConfiguration
    }

    /// Connects, completes TLS, and fetches the server's configuration.
    public static func connect(settings: Settings, group: EventLoopGroup, logger: Logger) async throws -> TunnelClientConnection {
        let eventLoop = group.next()
        let activePromise = eventLoop.makePromise(of: NIOLoopBound<TunnelMultiplexer>.self)
        let configurationPromise = eventLoop.makePromise(of: [String: PropertyListValue].self)
        let loginPromise = eventLoop.makePromise(of: TunnelLoginAnswer.self)
        let tlsFailure = NIOLockedValueBox<TLSError?>(nil)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(settings.connectTimeout)
            .resolver(settings.resolver?(eventLoop))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try TunnelSocketOptions.apply(to: channel)
                    if let mark = settings.socketMark {
                        // Before the connect: the SYN is the first packet the kill switch must let out.
                        try channel.syncOptions?.setOption(
                            ChannelOptions.Types.SocketOption(level: .socket, name: NIOBSDSocket.Option(rawValue: SO_MARK)), value: Int(mark))
                    }
                    let pipeline = channel.pipeline.syncOperations
                    if let tls = settings.tls {
                        try pipeline.addHandler(TLSHandler(context: tls, serverName: settings.serverName ?? settings.host, logger: logger))
                        try pipeline.addHandler(TLSHandshakeFailureRecorder(into: tlsFailure))
                    }
                    try pipeline.addTunnelMessageCodec()
                    try pipeline.addHandler(
                        TunnelChannelHandler(role: { .client }, limits: settings.limits, liveness: settings.liveness, logger: logger) { multiplexer in
                            // The first message goes from the event loop at once (queued until
                            // TLS is up), so a busy caller can never let the server's
                            // first-message timeout run out (PROTOCOL.md B5).
                            if let credentials = settings.credentials {
                                multiplexer.authenticate(login: credentials.login, password: credentials.password) {
                                    loginPromise.completeWith($0.mapError { $0 })
                                }
                            } else {
                                loginPromise.succeed(TunnelLoginAnswer(result: .success))
                            }
                            multiplexer.fetchConfiguration { configurationPromise.completeWith($0.mapError { $0 }) }
                            activePromise.succeed(NIOLoopBound(multiplexer, eventLoop: channel.eventLoop))
                        }
                    )
                }
            }
        let channel: Channel
        do {
            // An address (a reconnection's) is connected to as it is: no resolver is asked about it.
            if let address = try? SocketAddress(ipAddress: settings.host, port: settings.port) {
                channel = try await bootstrap.connect(to: address).get()
            } else {
                channel = try await bootstrap.connect(host: settings.host, port: settings.port).get()
            }
        } catch {
            activePromise.fail(error)
            loginPromise.fail(error)
            configurationPromise.fail(error)
            throw TunnelConnectError(error, host: settings.host, port: settings.port)
        }
        let serverAddress = channel.remoteAddress
        channel.closeFuture.whenComplete { _ in
            activePromise.fail(TunnelClosedError())
            loginPromise.fail(TunnelClosedError())
            configurationPromise.fail(TunnelClosedError())
        }
        let multiplexer: NIOLoopBound<TunnelMultiplexer>
        let configuration: [String: PropertyListValue]
        do {
            multiplexer = try await activePromise.futureResult.get()
            let answer = try await loginPromise.futureResult.get()
            switch answer.result {
            case .success: break
            case .timeout:
                try? await channel.close()
                throw TunnelLoginUnavailableError()
            default:
                try? await channel.close()
                throw TunnelLoginRefusedError(login: settings.credentials?.login ?? "", detail: answer.detail)
            }
            configuration = try await configurationPromise.futureResult.get()
        } catch let error as TunnelLoginRefusedError {
            throw error
        } catch let error as TunnelLoginUnavailableError {
            throw error
        } catch {
            // A failed TLS handshake closes the tunnel: say why.
            throw tlsFailure.withLockedValue { $0 } ?? error
        }
        return TunnelClientConnection(channel: channel, serverAddress: serverAddress, multiplexer: multiplexer, serverConfiguration: configuration)
    }

    private static func fetchConfiguration(
        _ multiplexer: NIOLoopBound<TunnelMultiplexer>,
        on eventLoop: EventLoop
    ) async throws -> [String: PropertyListValue] {
        let promise = eventLoop.makePromise(of: [String: PropertyListValue].self)
        eventLoop.execute {
            multiplexer.value.fetchConfiguration { promise.completeWith($0.mapError { $0 }) }
        }
        return try await promise.futureResult.get()
    }

    /// Asks the server for its configuration again.
    public func fetchConfiguration() async throws -> [String: PropertyListValue] {
        try await Self.fetchConfiguration(multiplexerBox, on: eventLoop)
    }

    /// The multiplexer; only on `eventLoop`.
    public var multiplexer: TunnelMultiplexer { multiplexerBox.value }

    /// Counters of the tunnel.
    public func statistics() async throws -> TunnelStatistics {
        try await eventLoop.submit { self.multiplexerBox.value.currentStatistics }.get()
    }

    /// Closes the tunnel (TLS sends close_notify) and waits until it is closed.
    public func close() async {
        try? await channel.close()
    }

    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }
}

extension TunnelClientConnection.Settings {
    /// The settings for bringing a lost tunnel back: to `address`, where the
    /// last tunnel went (nil: none known, the name again), still verifying
    /// and sending as SNI the name the user gave.
    public func reconnecting(to address: String?) -> Self {
        guard let address else { return self }
        var settings = self
        settings.serverName = serverName ?? host
        settings.host = address
        return settings
    }
}

/// The server refused the login: trying again with the same password cannot help.
public struct TunnelLoginRefusedError: Error, CustomStringConvertible {
    public var login: String
    /// Why, when the server said (its `result-detail`, PROTOCOL.md B2): then the password was right.
    public var detail: TunnelLoginRefusalDetail?

    public init(login: String, detail: TunnelLoginRefusalDetail? = nil) {
        self.login = login
        self.detail = detail
    }

    /// Without a detail the refusal carries no reason (PROTOCOL.md B2), so the message names what it can be.
    public var description: String {
        switch detail {
        case .expired:
            return "the server refused the login \"\(login)\": this login has expired; ask the server's operator to extend it (Server.Users Expires)"
        case .disabled:
            return "the server refused the login \"\(login)\": this login has been disabled by the server's operator"
        case nil:
            break
        }
        return "the server refused the login \"\(login)\": a wrong login or password, or too many failed attempts from this address "
            + "have locked it out for a while, or the login already holds as many tunnels as the server allows one login; "
            + "the server's log says which"
    }
}

/// The server could not check the login now (result 4, PROTOCOL.md B2: its
/// logins' database is unavailable): not a wrong login, so it is tried again.
public struct TunnelLoginUnavailableError: Error, CustomStringConvertible {
    public var description: String {
        "the server cannot check logins now (its database is unavailable); not a wrong login or password: try again later"
    }
}
