import Logging
import NIOCore

/// The logical connections of one tunnel: the identifier → flow table and the
/// glue between three values that decide — each flow's `FlowState`, the
/// tunnel's `TunnelSchedule` and its `TunnelBudgets` — and the sockets and
/// the tunnel that carry their decisions out. What the budgets decide
/// arrives as a `BudgetChange` and is carried out in `apply` only.
///
/// Lives on the tunnel's event loop; every call comes from there. It performs
/// no I/O of its own: it writes messages to a `TunnelOutput` and drives
/// `FlowEndpoint`s, so tests can run it with fakes.
///
/// After every event of a flow, `transition` performs the `FlowAction` it
/// answers with, then `reconcile` brings the world in line with the flow's
/// state: its endpoint reads exactly when the state (and the tunnel's memory
/// budget) wants it to, it is scheduled when it has something to send, and it
/// is forgotten when it is done. Nothing else starts or stops a flow's
/// reading, so no flow can be left paused by a missed event.
public final class TunnelMultiplexer {
    public struct Limits: Sendable {
        /// Flows open or opening at once in this tunnel.
        public var maximumFlows = 4096
        /// UDP flows at once in this tunnel.
        public var maximumUDPFlows = 256
        /// A UDP flow with no datagram either way for this long is closed.
        public var udpIdleTimeout: TimeAmount = .seconds(60)
        /// Data kept for a flow that is still connecting (PROTOCOL.md A6).
        public var earlyDataAllowance = 256 * 1024
        /// Data accepted for a flow after we sent `suspend` (PROTOCOL.md A4 asks
        /// for at least 1 MiB). What a compliant peer already had in flight when
        /// `suspend` left arrives after it, and Apple's clients ignore `suspend`
        /// altogether; past this a server stops reading the peer until the
        /// flow's socket drains (a client closes the flow)...
        public var suspendAllowance = 16 * 1024 * 1024
        /// ...and likewise per tunnel: data past `suspend`, summed over its flows.
        public var tunnelSuspendAllowance = 64 * 1024 * 1024
        /// A flow's queue stops reading its socket at the high mark, restarts at the low one.
        public var flowQueueHighWatermark = 256 * 1024
        public var flowQueueLowWatermark = 64 * 1024
        /// Bytes queued for the peer over all of this tunnel's flows. At this
        /// mark every flow stops reading its socket; they start again at half.
        public var tunnelBufferBudget = 8 * 1024 * 1024
        /// Server: early data held over all flows still connecting. At this mark
        /// the peer is not read until opens complete and it falls to half.
        public var tunnelEarlyDataBudget = 4 * 1024 * 1024
        /// Server: replies and other control messages waiting for a peer that
        /// does not read. At this many the peer is not read until they drain.
        public var controlBacklogLimit = 1024
        /// Largest `data` payload sent, and a flow's largest turn in the
        /// schedule; the turn follows the link's rate below it (`turnBytes`).
        public var maximumDataChunk = 64 * 1024

        public init() {}

        /// The bytes an IP flow's queue may hold before it drops packets on
        /// arrival. `CoDel` keeps it far below this in steady traffic; the
        /// room is for bursts at gigabit rates (5 ms at 5 Gbit/s is 3 MB),
        /// and half the tunnel's budget leaves its other flows the rest.
        var ipQueueLimit: Int { tunnelBufferBudget / 2 }

        var flowLimits: FlowState.Limits {
            FlowState.Limits(earlyDataAllowance: earlyDataAllowance, queue: Watermark(high: flowQueueHighWatermark, low: flowQueueLowWatermark))
        }
    }

    public enum Role {
        /// Opens flows the peer asks for, answers tunnel-level requests.
        case server(opener: FlowOpener, responder: TunnelRequestResponder)
        /// Asks the peer to open flows for local sockets.
        case client
    }

    /// A flow's local end and what it was last told.
    struct EndpointSlot {
        let end: LocalFlowEnd
        var reading = false
    }

    let role: Role
    let limits: Limits
    let eventLoop: EventLoop
    var logger: Logger
    /// Where messages go, and who is told whether to read the peer.
    unowned let output: TunnelOutput

    var flows = FlowTable()
    /// Endpoints of the flows that have one (a server's only once open).
    var endpoints: [TunnelConnectionIdentifier: EndpointSlot] = [:]
    var schedule = TunnelSchedule()
    var budgets: TunnelBudgets
    /// The server's budget over all its tunnels, charged as `budgets` asks; nil on a client.
    let serverBudget: ServerBufferBudget?
    var counters: TunnelCounters
    var udp = UDPFlowCount()
    var pending = PendingWork()
    /// The server's per-login meter (`trafficMeter`) and the holds it asked for.
    var traffic = TunnelTraffic()
    var isClosed = false
    /// Payload one flow sends per turn: what its handler's `LinkPace` says, at
    /// most `limits.maximumDataChunk` (until a reading, that).
    var turnBytes: Int {
        get { turn }
        set { turn = max(1, min(newValue, limits.maximumDataChunk)) }
    }
    private(set) var turn: Int
    /// Bytes waiting in the flows' own queues for a turn (streams' data and IP packets).
    var queuedFlowBytes: Int { budgets.queued.level }
    /// Lines a peer can cause as often as it likes: one a second per tunnel,
    /// the next one saying how many were left out.
    private var peerNotices = LineRateLimiter(interval: .seconds(1))
    /// A client's opens and requests waiting for the server's answer.
    var client = ClientRequests()

    public init(
        role: Role, output: TunnelOutput, eventLoop: EventLoop, limits: Limits = Limits(), metrics: (any TunnelMultiplexerMetrics)? = nil,
        serverBudget: ServerBufferBudget? = nil, logger: Logger
    ) {
        self.role = role
        self.output = output
        self.eventLoop = eventLoop
        self.limits = limits
        self.turn = limits.maximumDataChunk
        self.logger = logger
        self.counters = TunnelCounters(metrics: metrics)
        let overrun: SuspendAllowance.Overrun
        if case .server = role { overrun = .holdPeer } else { overrun = .abortFlow }
        self.budgets = TunnelBudgets(limits: limits, chargesServer: serverBudget != nil, overrun: overrun)
        self.serverBudget = serverBudget
    }

    /// Whether any flow is open or opening: such a tunnel is never idle.
    public var holdsFlows: Bool { !flows.isEmpty }

    /// Counters of this tunnel, for logs and status.
    public var currentStatistics: TunnelStatistics {
        var snapshot = counters.statistics
        snapshot.openFlows = flows.count
        return snapshot
    }

    // MARK: Tunnel events

    /// The tunnel connection can take more, or no more, bytes. Flows keep
    /// reading into their queues meanwhile (within their watermarks and the
    /// tunnel's budget), so that when it drains the schedule, not the order of
    /// socket events, decides what goes first.
    public func tunnelWritabilityChanged(_ isWritable: Bool) {
        if isWritable { drain() }
    }

    /// The end of a burst of messages from the peer: flush what was written locally.
    public func peerReadBurstEnded() {
        if !pending.endpointsToFlush.isEmpty {
            var identifiers: [TunnelConnectionIdentifier] = []
            swap(&identifiers, &pending.endpointsToFlush)
            for identifier in identifiers {
                endpoints[identifier]?.end.data?.flush()
            }
        }
        drain()
    }

    /// The tunnel is gone: abort every local socket (nobody is left to read
    /// what they hold), fail whatever waits.
    public func tunnelClosed() {
        guard !isClosed else { return }
        isClosed = true
        udp.expiry?.cancel()
        udp.expiry = nil
        traffic.holds.cancel()
        for entry in flows.entries.values {
            switch entry {
            case .stream(let flow) where flow.isOpen: counters.metrics?.flowClosed(flow.kind)
            case .ip(let flow) where flow.isOpen: counters.metrics?.flowClosed(.ip)
            default: break
            }
        }
        let slots = endpoints.values
        serverBudget?.forget(ObjectIdentifier(self))
        // What it charged the server goes back; closed, it waits for nothing.
        apply(budgets.tunnelClosed())
        flows.removeAll()
        endpoints.removeAll()
        schedule.removeAll()
        for slot in slots {
            slot.end.close(aborting: true) {}
        }
        client.failAll()
    }

    // MARK: Transitions

    /// Brings the flow's endpoint, its place in the schedule and its existence
    /// in line with its state, read where it is (`earlier`, where the flow
    /// was found before, saves the lookup while no flow entered or left the
    /// table; `known`, the answer of the event just run, saves reading it
    /// while it holds). Returns where the flow was found, nil when it is gone.
    @discardableResult
    func reconcile(_ identifier: TunnelConnectionIdentifier, after earlier: FlowTable.Found? = nil, known: FlowTable.KnownNeeds? = nil) -> FlowTable.Found? {
        guard let (needs, found) = flows.needs(identifier, after: earlier, known: known) else { return nil }
        if needs.isDone {
            forget(identifier)
            return nil
        }
        if needs.hasSomethingToSend, schedule.markReady(identifier) {
            scheduleDrain()
        }
        updateReading(identifier, wanted: needs.wantsReading && budgets.mayReadLocally)
        return found
    }

    /// Counts what the tunnel holds and acts when a budget is crossed.
    @inline(__always)
    func account(queued: Int, early: Int) {
        // After most events of a flow nothing it holds changed: the budgets are not even touched.
        guard queued != 0 || early != 0 else { return }
        apply(budgets.account(queued: queued, early: early))
    }

    private func updateReading(_ identifier: TunnelConnectionIdentifier, wanted: Bool) {
        guard let index = endpoints.index(forKey: identifier), endpoints.values[index].reading != wanted else { return }
        endpoints.values[index].reading = wanted
        // Out of the table first: an endpoint may report what it held at once, which changes the table.
        let end = endpoints.values[index].end
        end.data?.setReading(wanted)
    }

    private func updateEveryFlowsReading() {
        let may = budgets.mayReadLocally
        for case (let identifier, .stream(let flow)) in flows.entries {
            updateReading(identifier, wanted: flow.wantsReading && may)
        }
    }

    /// Carries out what a change to the budgets says: the one place where
    /// flows' and the peer's reading follow them. Crossing a budget is rare;
    /// within them nothing here runs.
    @inline(__always)
    func apply(_ change: BudgetChange) {
        guard change != .noChange else { return }
        applyChanged(change)
    }

    @inline(never)
    private func applyChanged(_ change: BudgetChange) {
        var change = change
        // Only the server's budget says when to go on (at its low mark), so that every paused tunnel hears it.
        if change.serverCharge != 0, let serverBudget, !serverBudget.charge(change.serverCharge), !isClosed {
            change = change.then(budgets.serverOverBudget())
        }
        if change.reachedServerBudget, let serverBudget {
            peerNotice("server buffer budget reached: pausing this tunnel", metadata: ["server-bytes": "\(serverBudget.heldBytes)"])
        }
        if change.reachedTunnelBudget {
            peerNotice("tunnel buffer budget reached: pausing its flows", metadata: ["bytes": "\(budgets.queued.level)"])
        }
        if case .changed = change.readFlows {
            updateEveryFlowsReading()
        }
        if case .changed(let reading) = change.readPeer {
            if !reading, !budgets.suspendAllowance.mayReadPeer {
                peerNotice(
                    "the peer keeps sending after suspend: not reading it until its flows drain",
                    metadata: ["bytes": "\(budgets.suspendAllowance.total)"])
            }
            output.peerReadingChanged(reading)
        }
        if change.reachedServerBudget, let serverBudget {
            let bound = NIOLoopBound(self, eventLoop: eventLoop)
            serverBudget.wait(ObjectIdentifier(self), on: eventLoop) {
                bound.value.serverBudgetResumed()
            }
        }
    }

    private func serverBudgetResumed() {
        guard !isClosed else { return }
        apply(budgets.serverResumed())
    }

    /// Logs at notice what the peer caused, rate-limited.
    func peerNotice(_ message: @autoclosure () -> Logger.Message, metadata: @autoclosure () -> Logger.Metadata) {
        guard let suppressed = peerNotices.admit() else { return }
        var metadata = metadata()
        if suppressed > 0 {
            metadata["suppressed"] = "\(suppressed)"
        }
        logger.notice(message(), metadata: metadata)
    }

    // MARK: Sending

    func sendControl(_ message: TunnelMessage) {
        guard !isClosed else { return }
        schedule.enqueueControl(message)
        apply(budgets.controlBacklog(schedule.controlCount))
        scheduleDrain()
    }

    /// Drains at the end of this event-loop tick, so that many reads and
    /// messages in one tick share one pass and one flush.
    func scheduleDrain() {
        guard !pending.drainScheduled, !isClosed else { return }
        pending.drainScheduled = true
        eventLoop.assumeIsolated().execute { [weak self] in
            self?.drain()
        }
    }

    /// Writes control messages, then flows' turns, while the tunnel is writable.
    func drain() {
        pending.drainScheduled = false
        guard !isClosed else { return }
        var wrote = false
        var wroteControl = false
        while output.isWritable {
            if let message = schedule.popControl() {
                output.write(message)
                wrote = true
                wroteControl = true
                continue
            }
            guard traffic.holds.sending == nil, let identifier = schedule.nextFlow() else { break }
            wrote = sendTurn(of: identifier) || wrote
        }
        if wrote {
            output.flush()
        }
        // Only a written control message shortens their backlog (`sendControl` counts the rest);
        // most drains write only data, and skip the budgets.
        if wroteControl {
            apply(budgets.controlBacklog(schedule.controlCount))
        }
    }

    /// The least a chunk cut to the tunnel's room carries.
    static let smallestPacedChunk = 1024

    /// Sends up to one turn of a flow's queue; returns whether anything was written.
    private func sendTurn(of identifier: TunnelConnectionIdentifier) -> Bool {
        switch flows.kind(identifier) {
        case (.stream?, let found)?:
            return sendStreamTurn(of: identifier, at: found)
        case (.ip?, let found)?:
            return sendIPTurn(of: identifier, at: found)
        case (nil, _)?:
            impossible(identifier, .phaseBeingModified)
            return false
        case nil:
            schedule.turnEnded(identifier, hasMore: false)
            return false
        }
    }

    /// A TCP or UDP flow's turn: up to one turn of its queue, `first` where it
    /// was just found. Returns whether anything was written.
    private func sendStreamTurn(of identifier: TunnelConnectionIdentifier, at first: FlowTable.Found) -> Bool {
        var sent = 0
        var wrote = false
        let turn = self.turn
        var found: FlowTable.Found? = first
        var known: FlowTable.KnownNeeds?
        while sent < turn, mayWriteFlows {
            // `transition` writes what the flow sends.
            // On a slow link a chunk stops near the room the tunnel has left, so
            // what waits in front of the link passes it by little (a small chunk costs a frame).
            let chunk = min(turn - sent, max(output.writableBytes, Self.smallestPacedChunk))
            guard case .send(let item)? = transition(identifier, found: &found, known: &known, { $0.nextToSend(maximumChunk: chunk) }) else { break }
            wrote = true
            sent += item.payloadBytes
        }
        let needs = flows.needs(identifier, after: found, known: known)?.0
        schedule.turnEnded(identifier, hasMore: needs?.hasSomethingToSend ?? false)
        // A flow whose last item was its close is done once it has gone.
        if needs?.isDone == true {
            forget(identifier)
        }
        return wrote
    }

    func countSent(_ bytes: Int) {
        counters.statistics.bytesToPeer += UInt64(bytes)
        counters.metrics?.bytesToPeer(bytes)
        meterSent(bytes)
    }

    // MARK: Forgetting

    /// Forgets a flow: its endpoint is closed after what was written to it has
    /// gone, or at once, discarding it, when `aborting`. The endpoint reports
    /// nothing more under the identifier, which may name a new flow at once.
    // Out of line: it ends a flow's last turn, and inlined there it would weigh on every turn.
    @inline(never)
    func forget(_ identifier: TunnelConnectionIdentifier, aborting: Bool = false) {
        let kind: TunnelFlowKind
        let wasOpen: Bool
        switch flows.remove(identifier) {
        case .stream(let flow)?:
            account(queued: -flow.queue.bufferedBytes, early: -flow.earlyDataBytes)
            (kind, wasOpen) = (flow.kind, flow.isOpen)
        case .ip(let flow)?:
            account(queued: -flow.queue.bufferedBytes, early: 0)
            (kind, wasOpen) = (.ip, flow.isOpen)
        case .modifying?, nil:
            return
        }
        let slot = endpoints.removeValue(forKey: identifier)
        schedule.remove(identifier)
        if kind == .udp { udp.count -= 1 }
        if wasOpen {
            counters.metrics?.flowClosed(kind)
        }
        if let end = slot?.end {
            let socket = end.object
            apply(budgets.flowForgotten(identifier, closingSocket: socket))
            end.close(aborting: aborting) { [weak self] in
                // After `tunnelClosed` everything charged has been given back already.
                guard let self, !self.isClosed else { return }
                self.apply(self.budgets.socketClosed(socket))
            }
        } else {
            apply(budgets.flowForgotten(identifier, closingSocket: nil))
        }
        logger.debug("flow closed", metadata: ["flow": "\(identifier)"])
    }

    /// Closes a flow at once and tells the peer: for abuse and expiry. What its
    /// socket still holds is discarded.
    func abort(_ identifier: TunnelConnectionIdentifier, reason: String) {
        guard flows.contains(identifier) else { return }
        peerNotice("closing flow", metadata: ["flow": "\(identifier)", "reason": "\(reason)"])
        sendControl(.close(identifier: identifier, direction: .all))
        forget(identifier, aborting: true)
    }
}

/// Answers the tunnel-level requests a server gets.
public protocol TunnelRequestResponder: AnyObject {
    /// The configuration for `fetchConfiguration` (PROTOCOL.md A5).
    func configurationForFetch() -> [String: PropertyListValue]
    /// Resolves a DNS query (B3); completes on the tunnel's event loop.
    func resolveDNS(_ query: ByteBuffer, completion: @escaping (Result<(answer: ByteBuffer, source: String), Error>) -> Void)
}

/// The tunnel closed before a reply arrived. A program says which of its
/// options would have given the server what it wanted.
public struct TunnelClosedError: Error, CustomStringConvertible {
    public init() {}
    public var description: String {
        "the server closed the tunnel before replying (a server that requires a login needs one; one that requires client certificates needs a certificate and its key)"
    }
}

/// Counters of one tunnel.
public struct TunnelStatistics: Sendable, Hashable {
    public var bytesFromPeer: UInt64 = 0
    public var bytesToPeer: UInt64 = 0
    public var flowsOpened: UInt64 = 0
    public var openFlows = 0
}
