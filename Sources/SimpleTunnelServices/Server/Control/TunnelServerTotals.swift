/// What the server has counted since it started, kept by the `TunnelRegistry`:
/// a closed tunnel's final counters are added here as it goes, so the totals
/// keep what the open tunnels' counters lose when they close.
struct TunnelServerTotals: Sendable, Equatable {
    var tunnelsAccepted = 0
    var tunnelsClosed = 0
    /// Only of closed tunnels: the open ones' own counters are added when `status` asks.
    var bytesFromClosedClients: UInt64 = 0
    var bytesToClosedClients: UInt64 = 0
    var logins: [LoginOutcome: Int] = [:]

    mutating func accepted() {
        tunnelsAccepted += 1
    }

    mutating func closed(with statistics: TunnelStatistics) {
        tunnelsClosed += 1
        bytesFromClosedClients += statistics.bytesFromPeer
        bytesToClosedClients += statistics.bytesToPeer
    }

    mutating func login(_ outcome: LoginOutcome) {
        logins[outcome, default: 0] += 1
    }

    /// Since start, as `status` shows it: closed tunnels' bytes plus those of `open`, the tunnels open now.
    func sinceStart(startedAt: String, open: [TunnelServerStatus.Tunnel]) -> TunnelServerStatus.SinceStart {
        TunnelServerStatus.SinceStart(
            startedAt: startedAt, tunnelsAccepted: tunnelsAccepted, tunnelsClosed: tunnelsClosed,
            bytesFromClients: open.reduce(bytesFromClosedClients) { $0 + $1.bytesFromClient },
            bytesToClients: open.reduce(bytesToClosedClients) { $0 + $1.bytesToClient },
            loginsSucceeded: logins[.success, default: 0],
            loginsFailed: logins.filter { $0.key != .success }.values.reduce(0, +))
    }
}
