import Logging
import NIOCore
import NIOPosix

/// `ssh -L` for the tunnel: every connection accepted on a local port becomes
/// a TCP flow to one destination, opened by the server.
public enum TCPPortForwarder {
    public static func start(
        bindHost: String,
        bindPort: Int,
        destination: TunnelEndpoint,
        tunnel: any TunnelMultiplexerProvider,
        logger: Logger
    ) async throws -> LocalListener {
        let channel = try await LocalListener.streamBootstrap(on: tunnel.eventLoop).flowListenerOptions()
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try FlowSocketOptions.applyToAccepted(channel)
                    openFlow(for: channel, destination: destination, tunnel: tunnel, logger: logger)
                }
            }
            .bind(host: bindHost, port: bindPort)
            .namingListenAddress(host: bindHost, port: bindPort)
            .get()
        let forwarder = try LocalListener(channel: channel)
        logger.notice("forwarding \(TunnelEndpoint(forwarder.localAddress)) to \(destination) through the tunnel")
        return forwarder
    }

    /// Opens the flow for an accepted connection, whose handler is made for
    /// the flow; closes the connection if there is no tunnel or the server refuses.
    static func openFlow(
        for channel: Channel,
        destination: TunnelEndpoint,
        tunnel: any TunnelMultiplexerProvider,
        logger: Logger
    ) {
        // Spelled out only for a line logged: formatting an address costs more than a flow's own bookkeeping.
        let remoteAddress = channel.remoteAddress
        let peer = { remoteAddress.map { TunnelEndpoint($0).description } ?? "unknown" }
        guard let multiplexer = tunnel.currentMultiplexer else {
            logger.notice("forwarded connection closed: the tunnel is down, reconnecting", metadata: ["client": "\(peer())", "destination": "\(destination)"])
            channel.close(promise: nil)
            return
        }
        let identifier = multiplexer.openFlow(.tcp(destination)) { reporter in
            let endpoint = StreamFlowEndpoint(reporter: reporter)
            try channel.pipeline.syncOperations.addHandler(endpoint)
            return .tcp(endpoint)
        } completion: { result in
            if case .failure(let failure) = result {
                logger.notice("forwarded connection refused", metadata: ["client": "\(peer())", "destination": "\(destination)", "reason": "\(failure)"])
            }
        }
        if identifier == nil {
            channel.close(promise: nil)
        }
    }
}
