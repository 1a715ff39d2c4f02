import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The server's open tunnels, for shutdown, `status`, `kick` and a reload
/// that removes users; and what it counted since it started.
final class TunnelRegistry: Sendable {
    private struct State {
        var peers: [ObjectIdentifier: TunnelPeer] = [:]
        var totals = TunnelServerTotals()
        /// Tunnels logged in per login, kept with the peers so a check and its claim are one step.
        var tunnelsByLogin: [String: Int] = [:]
        /// When the heap a peak of tunnels grew is handed back.
        var heapTrims: HeapTrimSchedule
        /// Each login's usage counted here and not yet stored.
        var usage = UsageLedger()
    }

    private let state: NIOLockedValueBox<State>
    let startedAt = Date()
    private let logger: Logger

    init(heapTrims: HeapTrimSchedule = HeapTrimSchedule(), logger: Logger = Logger(label: "tunnel-server")) {
        self.state = NIOLockedValueBox(State(heapTrims: heapTrims))
        self.logger = logger
    }

    func add(_ peer: TunnelPeer) {
        state.withLockedValue { state in
            state.peers[ObjectIdentifier(peer)] = peer
            state.totals.accepted()
            let open = state.peers.count
            state.heapTrims.opened(openNow: open)
        }
    }

    /// `final`: the tunnel's counters as it closed, kept in the totals since start.
    func remove(_ peer: TunnelPeer, final: TunnelStatistics) {
        let trim = state.withLockedValue { state -> HeapTrimSchedule.Decision in
            guard state.peers.removeValue(forKey: ObjectIdentifier(peer)) != nil else { return .nothing }
            state.totals.closed(with: final)
            state.usage.closed(
                ObjectIdentifier(peer), login: peer.currentLogin, fromClient: final.bytesFromPeer, toClient: final.bytesToPeer, now: Date())
            if let login = peer.currentLogin {
                let remaining = (state.tunnelsByLogin[login] ?? 1) - 1
                state.tunnelsByLogin[login] = remaining > 0 ? remaining : nil
            }
            let open = state.peers.count
            return state.heapTrims.closed(openNow: open, now: .now)
        }
        carryOut(trim, on: peer.channel.eventLoop)
    }

    private func carryOut(_ decision: HeapTrimSchedule.Decision, on eventLoop: EventLoop) {
        switch decision {
        case .nothing:
            return
        case .checkAgain(let after):
            eventLoop.scheduleTask(in: TimeAmount(after)) {
                let decision = self.state.withLockedValue { state in
                    let open = state.peers.count
                    return state.heapTrims.deferredCheck(openNow: open, now: .now)
                }
                self.carryOut(decision, on: eventLoop)
            }
        case .trimNow:
            // Off the event loops: it takes each malloc arena's lock in turn.
            let logger = self.logger
            let open = state.withLockedValue { $0.peers.count }
            Thread.detachNewThread {
                let before = ProcessFigures.current()?.residentMemoryBytes
                MallocTuning.trim()
                let after = ProcessFigures.current()?.residentMemoryBytes
                logger.info(
                    "freed memory given back to the system after a peak of tunnels",
                    metadata: [
                        "tunnels": "\(open)", "rss-before-mib": "\(before.map { $0 >> 20 } ?? 0)", "rss-after-mib": "\(after.map { $0 >> 20 } ?? 0)",
                    ])
            }
        }
    }

    func login(_ outcome: LoginOutcome) {
        state.withLockedValue { $0.totals.login(outcome) }
    }

    /// The peer logged in as `login`, if that login holds fewer than `cap` tunnels; false (and
    /// nothing changes) when it holds that many already. Checked and counted under one lock,
    /// so logins finishing together cannot all slip under the cap.
    func logIn(_ peer: TunnelPeer, as login: String, atMost cap: Int) -> Bool {
        state.withLockedValue { state in
            // A peer already gone (closed while its password was checked) takes no place.
            guard state.peers[ObjectIdentifier(peer)] != nil else { return false }
            guard (state.tunnelsByLogin[login] ?? 0) < cap else { return false }
            state.tunnelsByLogin[login, default: 0] += 1
            peer.loggedIn(as: login)
            state.usage.seen(login, now: Date())
            return true
        }
    }

    /// Tunnels logged in as `login` now.
    func tunnels(ofLogin login: String) -> Int {
        state.withLockedValue { $0.tunnelsByLogin[login] ?? 0 }
    }

    var all: [TunnelPeer] { state.withLockedValue { Array($0.peers.values) } }

    /// Closes the tunnels whose login matches; returns how many. Closed outside
    /// the lock: a close on this thread removes the tunnel at once.
    /// `leasingOnly`: only those holding a tunnel address (an IP flow open).
    func end(loginMatching matches: (String) -> Bool, leasingOnly: Bool = false) -> Int {
        let chosen = all.filter { ($0.currentLogin.map(matches) ?? false) && (!leasingOnly || $0.currentLease != nil) }
        for peer in chosen { peer.close() }
        return chosen.count
    }

    /// The usage counted since the last take, open tunnels' traffic so far
    /// included (each read on its event loop), handed over to be stored.
    func takeUsage(now: Date = Date()) async -> [UsageRecord] {
        var readings: [(ObjectIdentifier, String, TunnelStatistics)] = []
        for peer in all {
            let reading = try? await peer.channel.eventLoop.submit { () -> (String, TunnelStatistics)? in
                guard let login = peer.currentLogin, let statistics = Self.statistics(of: peer) else { return nil }
                return (login, statistics)
            }.get()
            if let (login, statistics) = reading { readings.append((ObjectIdentifier(peer), login, statistics)) }
        }
        return state.withLockedValue { state in
            // A tunnel that closed meanwhile had its final counters read as it went.
            for (tunnel, login, statistics) in readings where state.peers[tunnel] != nil {
                state.usage.read(tunnel, login: login, fromClient: statistics.bytesFromPeer, toClient: statistics.bytesToPeer, now: now)
            }
            return state.usage.take()
        }
    }

    /// Records a store could not keep: offered again with the next take.
    func giveBackUsage(_ records: [UsageRecord]) {
        state.withLockedValue { $0.usage.giveBack(records) }
    }

    func status(now: Date = Date()) async -> TunnelServerStatus {
        let peers = all
        var described: [(ObjectIdentifier, TunnelServerStatus.Tunnel)] = []
        for peer in peers {
            if let tunnel = try? await peer.channel.eventLoop.submit({ Self.describe(peer, now: now) }).get() {
                described.append((ObjectIdentifier(peer), tunnel))
            }
        }
        // Taken after the rows: a tunnel that closed meanwhile is left out of them, as its
        // final counters are in the totals by now (counting it twice would make them jump).
        let (open, totals) = state.withLockedValue { state in (Set(state.peers.keys), state.totals) }
        var tunnels = described.filter { open.contains($0.0) }.map(\.1)
        tunnels.sort { ($0.since, $0.peer) < ($1.since, $1.peer) }
        let openNow = TunnelServerStatus.Totals(
            tunnels: tunnels.count, openFlows: tunnels.reduce(0) { $0 + $1.openFlows },
            bytesFromClients: tunnels.reduce(0) { $0 + $1.bytesFromClient }, bytesToClients: tunnels.reduce(0) { $0 + $1.bytesToClient })
        return TunnelServerStatus(
            tunnels: tunnels, totals: openNow, sinceStart: totals.sinceStart(startedAt: startedAt.formatted(.iso8601), open: tunnels))
    }

    /// One tunnel's row; on its event loop, where its handlers live. Nil once it has closed.
    private static func describe(_ peer: TunnelPeer, now: Date) -> TunnelServerStatus.Tunnel? {
        guard let handler = handler(of: peer) else { return nil }
        let statistics = statistics(of: handler)
        let session = (try? peer.channel.pipeline.syncOperations.handler(type: TLSHandler.self))?.sessionInfo
        let queue = handler.queueNow
        return TunnelServerStatus.Tunnel(
            login: peer.currentLogin, certificateSubject: peer.certificateSubject,
            peer: peer.address.map { TunnelEndpoint($0).description } ?? "unknown",
            leasedAddress: peer.currentLease, since: peer.since.formatted(.iso8601),
            seconds: now.timeIntervalSince(peer.since), bytesFromClient: statistics.bytesFromPeer, bytesToClient: statistics.bytesToPeer,
            openFlows: statistics.openFlows, tlsVersion: session?.protocolVersion, linkQueue: queue.map(TunnelServerStatus.LinkQueue.init))
    }

    /// The tunnel's counters; on its event loop. Nil once it has closed.
    private static func statistics(of peer: TunnelPeer) -> TunnelStatistics? {
        handler(of: peer).map(statistics(of:))
    }

    private static func statistics(of handler: TunnelChannelHandler) -> TunnelStatistics {
        handler.multiplexer?.currentStatistics ?? TunnelStatistics()
    }

    /// The tunnel's handler; on its event loop. Nil once it has closed.
    private static func handler(of peer: TunnelPeer) -> TunnelChannelHandler? {
        try? peer.channel.pipeline.syncOperations.handler(type: TunnelChannelHandler.self)
    }
}
