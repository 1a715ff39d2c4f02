import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// A Prometheus text endpoint on its own address (`--metrics ADDR:PORT`):
/// `GET /metrics` answers with the registry's current values, the build and
/// the process's figures read then (`ScrapeTimeMetrics`); anything else is 404.
public enum MetricsEndpoint {
    /// - Parameters:
    ///   - certificateExpiry: the certificate served now, read at each scrape.
    ///   - databaseAnswers: whether the shared database answers now (nil without one), read at each scrape.
    public static func start(
        host: String, port: Int, registry: PrometheusCollectorRegistry, group: EventLoopGroup, logger: Logger,
        certificateExpiry: @escaping @Sendable () -> CertificateExpiry? = { nil }, databaseAnswers: @escaping @Sendable () -> Bool? = { nil }
    ) async throws -> LocalListener {
        let scrapeTime = ScrapeTimeMetrics(registry: registry, certificateExpiry: certificateExpiry, databaseAnswers: databaseAnswers)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(MetricsRequestHandler(registry: registry, scrapeTime: scrapeTime))
                }
            }
            .bind(host: host, port: port)
            .namingListenAddress(host: host, port: port)
            .get()
        let endpoint = try LocalListener(channel: channel)
        logger.notice("metrics on http://\(TunnelEndpoint(endpoint.localAddress))/metrics")
        return endpoint
    }
}

private final class MetricsRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: PrometheusCollectorRegistry
    private let scrapeTime: ScrapeTimeMetrics
    private var request: HTTPRequestHead?

    init(registry: PrometheusCollectorRegistry, scrapeTime: ScrapeTimeMetrics) {
        self.registry = registry
        self.scrapeTime = scrapeTime
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            guard let request else { return }
            self.request = nil
            respond(to: request, context: context)
        }
    }

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let found = request.method == .GET && (request.uri == "/metrics" || request.uri.hasPrefix("/metrics?"))
        var body = context.channel.allocator.buffer(capacity: 0)
        if found {
            scrapeTime.refresh()
            body.writeBytes(registry.emitToBuffer())
        } else {
            body.writeString("not found: the metrics are at /metrics\n")
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: found ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        let head = HTTPResponseHead(version: request.version, status: found ? .ok : .notFound, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let keepAlive = request.isKeepAlive
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            if !keepAlive { context.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
