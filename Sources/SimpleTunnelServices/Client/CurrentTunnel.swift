import NIOConcurrencyHelpers
import NIOCore

/// Where local listeners (forwards, the SOCKS proxy) find the tunnel to open
/// their flows in, at the moment they need one.
public protocol TunnelMultiplexerProvider: Sendable {
    /// The event loop of every tunnel this provider hands out; listeners run on it.
    var eventLoop: EventLoop { get }
    /// The multiplexer of the tunnel that is up, nil while there is none. Only on `eventLoop`.
    var currentMultiplexer: TunnelMultiplexer? { get }
}

extension TunnelClientConnection: TunnelMultiplexerProvider {
    public var currentMultiplexer: TunnelMultiplexer? { channel.isActive ? multiplexer : nil }
}

/// The tunnel of a client that reconnects: empty while it is reasserting,
/// then the new tunnel, always on the same event loop, so that listeners
/// started once keep serving across reconnections.
public final class CurrentTunnel: TunnelMultiplexerProvider {
    public let eventLoop: EventLoop
    private let tunnel = NIOLockedValueBox<TunnelClientConnection?>(nil)

    public init(eventLoop: EventLoop) {
        self.eventLoop = eventLoop
    }

    public var connection: TunnelClientConnection? {
        tunnel.withLockedValue { $0 }
    }

    func set(_ connection: TunnelClientConnection?) {
        precondition(connection == nil || connection?.eventLoop === eventLoop, "a client's tunnels share one event loop")
        tunnel.withLockedValue { $0 = connection }
    }

    public var currentMultiplexer: TunnelMultiplexer? {
        connection?.currentMultiplexer
    }
}
