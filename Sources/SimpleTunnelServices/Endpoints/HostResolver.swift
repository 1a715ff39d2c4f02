import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Turns a destination's host into addresses; `HostResolver` is the system's.
public protocol NameResolver: Sendable {
    /// The addresses of `host` (or the literal itself); fails with
    /// `HostResolver.Failure.noSuchHost` when the name does not resolve.
    func resolve(host: String, port: Int, kind: HostResolver.SocketKind, on eventLoop: EventLoop) -> EventLoopFuture<[SocketAddress]>

    /// The addresses `resolve` would give, when known without waiting (an IP
    /// literal); nil: ask `resolve`. A flow to a literal then costs no future.
    func immediateAddresses(host: String, port: Int) -> [SocketAddress]?
}

extension NameResolver {
    /// A resolver that says nothing at once is always asked through `resolve`.
    public func immediateAddresses(host: String, port: Int) -> [SocketAddress]? { nil }
}

/// Resolves host names with the system resolver (`getaddrinfo`, so
/// /etc/hosts, nsswitch and resolv.conf apply) on NIO's blocking-I/O pool.
public struct HostResolver: NameResolver {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The name does not resolve (PROTOCOL.md A4 result 2).
        case noSuchHost(host: String, reason: String)

        public var description: String {
            switch self {
            case .noSuchHost(let host, let reason): return "\(host) does not resolve: \(reason)"
            }
        }
    }

    public enum SocketKind: Sendable {
        case stream, datagram
    }

    private let threadPool: NIOThreadPool

    public init(threadPool: NIOThreadPool = .singleton) {
        self.threadPool = threadPool
    }

    /// The addresses of `host` (or the literal itself), IPv4 and IPv6, in the resolver's order.
    public func resolve(host: String, port: Int, kind: SocketKind, on eventLoop: EventLoop) -> EventLoopFuture<[SocketAddress]> {
        // getaddrinfo would read only up to a NUL, inet_aton only up to a space: such a host is looked up as nothing at all.
        if let problem = TunnelHostSyntax.problem(with: host) {
            return eventLoop.makeFailedFuture(Failure.noSuchHost(host: PeerText.quoted(host, limit: 64), reason: problem))
        }
        if let literal = Self.literal(host, port: port) {
            return eventLoop.makeSucceededFuture([literal])
        }
        return threadPool.runIfActive(eventLoop: eventLoop) {
            try Self.getaddrinfo(host: host, port: port, kind: kind)
        }
    }

    /// An IP literal's address; nil for a name or a host `resolve` refuses.
    public func immediateAddresses(host: String, port: Int) -> [SocketAddress]? {
        guard TunnelHostSyntax.problem(with: host) == nil, let literal = Self.literal(host, port: port) else { return nil }
        return [literal]
    }

    private static func literal(_ host: String, port: Int) -> SocketAddress? {
        try? SocketAddress(ipAddress: TunnelEndpoint.unbracketed(host), port: port)
    }

    private static func getaddrinfo(host: String, port: Int, kind: SocketKind) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(kind == .stream ? SOCK_STREAM.rawValue : SOCK_DGRAM.rawValue)
        #else
        hints.ai_socktype = kind == .stream ? SOCK_STREAM : SOCK_DGRAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = Glibc.getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw Failure.noSuchHost(host: host, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let address = entry.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    let ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                    addresses.append(SocketAddress(ipv4, host: host))
                case AF_INET6:
                    let ipv6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                    addresses.append(SocketAddress(ipv6, host: host))
                default:
                    break
                }
            }
            cursor = entry.pointee.ai_next
        }
        guard !addresses.isEmpty else {
            throw Failure.noSuchHost(host: host, reason: "no IPv4 or IPv6 address")
        }
        return addresses
    }
}
