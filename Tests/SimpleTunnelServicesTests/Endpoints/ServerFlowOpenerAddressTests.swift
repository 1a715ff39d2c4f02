import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("Which resolved addresses a TCP open tries, and when it asks the resolver")
struct ServerFlowOpenerAddressTests {
    /// Refuses the addresses on the given ports, each with a reason naming its port.
    struct PortRefusing: DestinationAuthorizer {
        let refusedPorts: Set<Int>
        func refusal(forHost host: String, port: Int) -> String? { nil }
        func refusal(forAddress address: SocketAddress, requestedHost: String) -> String? {
            address.port.flatMap { refusedPorts.contains($0) ? "port \($0) refused" : nil }
        }
    }

    static let addresses = (1...3).map { try! SocketAddress(ipAddress: "127.0.0.1", port: $0) }

    @Test func everyAddressAllowedIsTriedInOrder() throws {
        let allowed = try ServerFlowOpener.allowed(Self.addresses, requestedHost: "h", by: AllowAllDestinations()).get()
        #expect(Array(allowed) == Self.addresses)
    }

    @Test func refusedAddressesAreLeftOutAndTheRestKeepTheirOrder() throws {
        let allowed = try ServerFlowOpener.allowed(Self.addresses, requestedHost: "h", by: PortRefusing(refusedPorts: [2])).get()
        #expect(Array(allowed).map(\.port) == [1, 3])
        let firstGone = try ServerFlowOpener.allowed(Self.addresses, requestedHost: "h", by: PortRefusing(refusedPorts: [1])).get()
        #expect(Array(firstGone).map(\.port) == [2, 3])
    }

    @Test func noAddressAllowedGivesTheFirstRefusal() {
        let result = ServerFlowOpener.allowed(Self.addresses, requestedHost: "h", by: PortRefusing(refusedPorts: [2, 3, 1]))
        #expect(result == .failure(ServerFlowOpener.AddressRefusal(reason: "port 1 refused")))
        let none = ServerFlowOpener.allowed([], requestedHost: "h", by: AllowAllDestinations())
        #expect(none == .failure(ServerFlowOpener.AddressRefusal(reason: "not allowed by policy")))
    }

    @Test func theSystemResolverKnowsALiteralAtOnce() throws {
        let resolver = HostResolver()
        #expect(resolver.immediateAddresses(host: "127.0.0.1", port: 80) == [try SocketAddress(ipAddress: "127.0.0.1", port: 80)])
        #expect(resolver.immediateAddresses(host: "[::1]", port: 443) == [try SocketAddress(ipAddress: "::1", port: 443)])
        #expect(resolver.immediateAddresses(host: "::1", port: 443) == [try SocketAddress(ipAddress: "::1", port: 443)])
        // A name waits for getaddrinfo; a host resolve refuses is refused there, with its reason.
        #expect(resolver.immediateAddresses(host: "localhost", port: 80) == nil)
        #expect(resolver.immediateAddresses(host: "127.0.0.1\u{0}.example", port: 80) == nil)
    }

    /// Knows one address at once and fails anything it is asked to resolve.
    final class ImmediateOnly: NameResolver, Sendable {
        let asked = NIOLockedValueBox(0)
        func resolve(host: String, port: Int, kind: HostResolver.SocketKind, on eventLoop: EventLoop) -> EventLoopFuture<[SocketAddress]> {
            asked.withLockedValue { $0 += 1 }
            return eventLoop.makeFailedFuture(HostResolver.Failure.noSuchHost(host: host, reason: "asked"))
        }
        func immediateAddresses(host: String, port: Int) -> [SocketAddress]? {
            [try! SocketAddress(ipAddress: "127.0.0.1", port: port)]
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func anAddressKnownAtOnceIsConnectedWithoutAskingResolve() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        // Nothing listens on the port: the connect is refused, which a resolve failure would not say.
        let port = try await ServerBootstrap(group: loop).bind(host: "127.0.0.1", port: 0).flatMap { channel in
            let port = channel.localAddress?.port ?? 0
            return channel.close().map { port }
        }.get()
        let resolver = ImmediateOnly()
        var configured = ServerFlowOpener.Settings()
        configured.resolver = resolver
        configured.connectTimeout = .seconds(5)
        let settings = configured
        let sink = SilentFlowSink()
        let result = try await loop.flatSubmit {
            let promise = loop.makePromise(of: FlowOpenResultCode.self)
            let opener = ServerFlowOpener(eventLoop: loop, settings: settings, logger: .init(label: "test"))
            opener.open(.tcp(TunnelEndpoint(host: "example.invalid", port: port)), reporter: FlowReporter(identifier: 1, sink: sink)) { result in
                switch result {
                case .success(let opened): opened.endpoint.close(aborting: true) {}; promise.succeed(.success)
                case .failure(let failure): promise.succeed(failure.result == .refused ? .refused : .other)
                }
            }
            return promise.futureResult
        }.get()
        #expect(result == .refused)
        #expect(resolver.asked.withLockedValue { $0 } == 0)
    }

    enum FlowOpenResultCode { case success, refused, other }
}
