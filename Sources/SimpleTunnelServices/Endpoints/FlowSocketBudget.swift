import NIOConcurrencyHelpers
import NIOCore

/// How many flow sockets the server holds at once, shared by every tunnel's
/// opener: each socket counts from the moment its open starts until it is
/// really closed, draining after its flow ended included. Beyond the server's
/// limit, or beyond a tunnel's share, opens are refused, so that no tunnel can
/// take the descriptors every other tunnel needs.
public final class FlowSocketBudget: Sendable {
    /// Flow sockets of all tunnels together.
    public let serverLimit: Int
    /// Flow sockets of any one tunnel, those still draining included.
    public let tunnelShare: Int
    private let state = NIOLockedValueBox(State())

    private struct State {
        var inUse = 0
        var refusalLog = LineRateLimiter()
    }

    public init(serverLimit: Int, tunnelShare: Int) {
        self.serverLimit = max(0, serverLimit)
        self.tunnelShare = max(0, min(tunnelShare, serverLimit))
    }

    /// The budget an open-file limit allows (see `serverLimit(openFileLimit:maximumTunnels:)`
    /// and `tunnelShare(serverLimit:maximumFlowsPerTunnel:)`).
    public convenience init(openFileLimit: Int, maximumTunnels: Int, maximumFlowsPerTunnel: Int) {
        let server = Self.serverLimit(openFileLimit: openFileLimit, maximumTunnels: maximumTunnels)
        self.init(serverLimit: server, tunnelShare: Self.tunnelShare(serverLimit: server, maximumFlowsPerTunnel: maximumFlowsPerTunnel))
    }

    /// For a server that has not decided: the process's current limit and the default limits.
    static func forCurrentProcess() -> FlowSocketBudget {
        FlowSocketBudget(
            openFileLimit: OpenFileLimit.current()?.soft ?? 1024,
            maximumTunnels: 256,  // TunnelServer.Settings' default
            maximumFlowsPerTunnel: TunnelMultiplexer.Limits().maximumFlows
        )
    }

    /// Descriptors kept back from flows besides one per tunnel: listeners,
    /// the event loops' epoll, eventfd and timerfd, the TUN device, log and
    /// lease files, the metrics endpoint and DNS queries, with room to spare.
    public static let fixedReserve = 128

    /// What is left of the open-file limit for flows once every tunnel the
    /// server admits and its own descriptors are provided for.
    public static func serverLimit(openFileLimit: Int, maximumTunnels: Int) -> Int {
        max(0, openFileLimit - fixedReserve - maximumTunnels)
    }

    /// A quarter of the server's sockets: one tunnel alone cannot starve the
    /// rest (it takes four at least, each admitted separately), while one busy
    /// client (a browser behind SOCKS opens some hundreds) still fits easily.
    /// Never more than the multiplexer lets a tunnel hold open, so a tunnel
    /// that closes flows faster than their sockets drain still runs out.
    public static func tunnelShare(serverLimit: Int, maximumFlowsPerTunnel: Int) -> Int {
        min(maximumFlowsPerTunnel, max(1, serverLimit / 4))
    }

    /// Flow sockets held now, by every tunnel.
    public var socketsInUse: Int { state.withLockedValue { $0.inUse } }

    /// One tunnel's account against this budget; its sockets outlive the tunnel.
    func makeAccount() -> FlowSocketAccount { FlowSocketAccount(budget: self, share: tunnelShare) }

    /// An account held to the server's limit only, for sockets that tunnels
    /// share a cap of their own on (DNS queries, see `DNSForwarder`).
    public func makeServerAccount() -> FlowSocketAccount { FlowSocketAccount(budget: self, share: serverLimit) }

    fileprivate func take() -> Bool {
        state.withLockedValue { state in
            guard state.inUse < serverLimit else { return false }
            state.inUse += 1
            return true
        }
    }

    fileprivate func give() {
        state.withLockedValue { $0.inUse -= 1 }
    }

    /// Whether to log a refusal now (refusals are what a hostile peer makes
    /// by the thousand); when so, how many went unlogged before it.
    func admitRefusalLog(now: NIODeadline = .now()) -> Int? {
        state.withLockedValue { $0.refusalLog.admit(now: now) }
    }
}

/// Why a flow socket was not granted.
enum FlowSocketRefusal: Error, Equatable, CustomStringConvertible {
    case serverLimit(Int)
    case tunnelShare(Int)

    var description: String {
        switch self {
        case .serverLimit(let limit):
            return "the server holds its limit of \(limit) flow sockets (--max-flow-sockets, or raise the open-file limit)"
        case .tunnelShare(let share):
            return "this tunnel holds its share of \(share) flow sockets, draining ones included"
        }
    }
}

/// One tunnel's flow sockets: its share of the server's budget.
public final class FlowSocketAccount: Sendable {
    let budget: FlowSocketBudget
    let share: Int
    private let held = NIOLockedValueBox(0)

    fileprivate init(budget: FlowSocketBudget, share: Int) {
        self.budget = budget
        self.share = share
    }

    var socketsInUse: Int { held.withLockedValue { $0 } }

    /// A server-wide account's share is the server's limit.
    private var shareRefusal: FlowSocketRefusal {
        share == budget.serverLimit ? .serverLimit(share) : .tunnelShare(share)
    }

    /// A ticket for one socket, to release once the socket is closed.
    func acquire() -> Result<FlowSocketTicket, FlowSocketRefusal> {
        held.withLockedValue { held in
            guard held < share else { return .failure(shareRefusal) }
            guard budget.take() else { return .failure(.serverLimit(budget.serverLimit)) }
            held += 1
            return .success(FlowSocketTicket(account: self))
        }
    }

    /// Why a socket would not be granted now, without taking one.
    func refusal() -> FlowSocketRefusal? {
        held.withLockedValue { held in
            if held >= share { return shareRefusal }
            if budget.socketsInUse >= budget.serverLimit { return .serverLimit(budget.serverLimit) }
            return nil
        }
    }

    fileprivate func give() {
        held.withLockedValue { $0 -= 1 }
        budget.give()
    }
}

/// One granted socket; released once, however many paths try.
final class FlowSocketTicket: Sendable {
    private let account: FlowSocketAccount
    private let released = NIOLockedValueBox(false)

    fileprivate init(account: FlowSocketAccount) {
        self.account = account
    }

    func release() {
        let first = released.withLockedValue { released in
            defer { released = true }
            return !released
        }
        if first { account.give() }
    }

    /// Releases when `channel` is really closed (its descriptor gone).
    func release(whenClosed channel: Channel) {
        channel.closeFuture.whenComplete { [self] _ in release() }
    }
}
