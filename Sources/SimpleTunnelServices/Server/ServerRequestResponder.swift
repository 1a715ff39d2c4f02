import NIOCore

/// Answers a tunnel's `fetchConfiguration` and `dns` requests for the server.
final class ServerRequestResponder: TunnelRequestResponder {
    private let configuration: [String: PropertyListValue]
    private let dns: DNSForwarder
    private let eventLoop: EventLoop
    /// Queries waiting for the resolver; each holds a socket, so they are capped.
    private var queriesInFlight = 0
    static let maximumQueriesInFlight = 64

    init(configuration: [String: PropertyListValue], dns: DNSForwarder, eventLoop: EventLoop) {
        self.configuration = configuration
        self.dns = dns
        self.eventLoop = eventLoop
    }

    func configurationForFetch() -> [String: PropertyListValue] {
        configuration
    }

    func resolveDNS(_ query: ByteBuffer, completion: @escaping (Result<(answer: ByteBuffer, source: String), Error>) -> Void) {
        guard queriesInFlight < Self.maximumQueriesInFlight else {
            return completion(.failure(DNSForwarder.Failure.tooManyQueries(Self.maximumQueriesInFlight)))
        }
        queriesInFlight += 1
        dns.forward(query, on: eventLoop).assumeIsolated().whenComplete { [weak self] result in
            self?.queriesInFlight -= 1
            completion(result)
        }
    }
}
