import NIOCore

/// Answers a tunnel's `fetchConfiguration` and `dns` requests for the server.
final class ServerRequestResponder: TunnelRequestResponder {
    private let configuration: [String: PropertyListValue]
    private let dns: DNSForwarder
    private let eventLoop: EventLoop

    init(configuration: [String: PropertyListValue], dns: DNSForwarder, eventLoop: EventLoop) {
        self.configuration = configuration
        self.dns = dns
        self.eventLoop = eventLoop
    }

    func configurationForFetch() -> [String: PropertyListValue] {
        configuration
    }

    func resolveDNS(_ query: ByteBuffer, completion: @escaping (Result<(answer: ByteBuffer, source: String), Error>) -> Void) {
        dns.forward(query, on: eventLoop).assumeIsolated().whenComplete(completion)
    }
}
