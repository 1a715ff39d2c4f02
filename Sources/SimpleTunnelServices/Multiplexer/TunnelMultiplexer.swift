import Logging
import NIOCore

/// The logical connections of one tunnel: the identifier → flow table, each
/// flow's state, flow control, and a fair schedule of what goes into the tunnel.
///
/// Lives on the tunnel's event loop; every call comes from there. It performs
/// no I/O of its own: it writes messages to a `TunnelOutput` and drives
/// `FlowEndpoint`s, so tests can run it with fakes.
///
/// Fairness: data read from local sockets waits in per-flow queues, drained in
/// rounds (a deficit round robin with one quantum per flow per round) while the
/// tunnel is writable; control messages go first. A flow whose queue passes its
/// high watermark, or that reads while the tunnel cannot take more, stops
/// reading its socket until there is room, so memory stays bounded.
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
        /// Data accepted for a flow after we sent `suspend` before the peer counts
        /// as abusive (PROTOCOL.md A4 asks for at least 1 MiB). What a compliant
        /// peer already had in flight when `suspend` left (its write buffer and
        /// both kernels' socket buffers) arrives after it, so this is generous...
        public var suspendAllowance = 16 * 1024 * 1024
        /// ...and bounded per tunnel: data past `suspend`, summed over its flows.
        public var tunnelSuspendAllowance = 64 * 1024 * 1024
        /// A flow's queue stops reading its socket at the high mark, restarts at the low one.
        public var flowQueueHighWatermark = 256 * 1024
        public var flowQueueLowWatermark = 64 * 1024
        /// Largest `data` payload sent; also the round-robin quantum.
        public var maximumDataChunk = 64 * 1024

        public init() {}
    }

    public enum Role {
        /// Opens flows the peer asks for, answers tunnel-level requests.
        case server(opener: FlowOpener, responder: TunnelRequestResponder)
        /// Asks the peer to open flows for local sockets.
        case client
    }

    let role: Role
    let limits: Limits
    /// The server's counters; nil on a client.
    let metrics: TunnelServerMetrics?
    let eventLoop: EventLoop
    var logger: Logger
    unowned let output: TunnelOutput

    var flows: [TunnelConnectionIdentifier: FlowState] = [:]
    var statistics = TunnelStatistics()
    /// Data received past `suspend`, summed over flows (see `Limits.tunnelSuspendAllowance`).
    var bytesPastSuspend = 0

    /// Tunnel-level and per-flow control messages, sent before any data.
    var control = CircularBuffer<TunnelMessage>()
    /// Flows with queued items, in round-robin order.
    var ready = CircularBuffer<TunnelConnectionIdentifier>()
    /// Flows that stopped reading because the tunnel was not writable.
    var pausedForTunnel: [TunnelConnectionIdentifier] = []
    /// Endpoints written to during the current read burst, flushed at its end.
    var endpointsToFlush: [TunnelConnectionIdentifier] = []
    var drainScheduled = false
    var tunnelWritable = true
    var isClosed = false
    var udpExpiryTask: Scheduled<Void>?

    // Client role.
    var nextIdentifier: TunnelConnectionIdentifier = 1
    var openCompletions: [TunnelConnectionIdentifier: (Result<[String: PropertyListValue]?, FlowOpenFailure>) -> Void] = [:]
    var configurationRequests = CircularBuffer<(Result<[String: PropertyListValue], TunnelClosedError>) -> Void>()
    var authenticationRequests = CircularBuffer<(Result<TunnelConnectionOpenResult, TunnelClosedError>) -> Void>()

    public init(role: Role, output: TunnelOutput, eventLoop: EventLoop, limits: Limits = Limits(), metrics: TunnelServerMetrics? = nil, logger: Logger) {
        self.role = role
        self.metrics = metrics
        self.output = output
        self.eventLoop = eventLoop
        self.limits = limits
        self.logger = logger
    }

    /// Counters of this tunnel, for logs and status.
    public var currentStatistics: TunnelStatistics {
        var snapshot = statistics
        snapshot.openFlows = flows.count
        return snapshot
    }

    // MARK: Tunnel events

    /// The tunnel connection can take more, or no more, bytes.
    public func tunnelWritabilityChanged(_ isWritable: Bool) {
        tunnelWritable = isWritable
        guard isWritable else { return }
        let paused = pausedForTunnel
        pausedForTunnel.removeAll()
        for identifier in paused {
            updateReading(identifier)
        }
        drain()
    }

    /// The end of a burst of messages from the peer: flush what was written locally.
    public func peerReadBurstEnded() {
        if !endpointsToFlush.isEmpty {
            var identifiers: [TunnelConnectionIdentifier] = []
            swap(&identifiers, &endpointsToFlush)
            for identifier in identifiers {
                flows[identifier]?.endpoint?.flush()
            }
        }
        drain()
    }

    /// The tunnel is gone: close every local socket, fail whatever waits.
    public func tunnelClosed() {
        guard !isClosed else { return }
        isClosed = true
        udpExpiryTask?.cancel()
        udpExpiryTask = nil
        let endpoints = flows.values.compactMap(\.endpoint)
        for flow in flows.values where flow.isOpen {
            metrics?.flowClosed(flow.kind)
        }
        flows.removeAll()
        control.removeAll()
        ready.removeAll()
        for endpoint in endpoints {
            endpoint.close()
        }
        let opens = openCompletions
        openCompletions.removeAll()
        for completion in opens.values {
            completion(.failure(FlowOpenFailure(.internalError, "the tunnel closed")))
        }
        while let request = configurationRequests.popFirst() {
            request(.failure(TunnelClosedError()))
        }
        while let request = authenticationRequests.popFirst() {
            request(.failure(TunnelClosedError()))
        }
    }

    // MARK: Sending

    func sendControl(_ message: TunnelMessage) {
        guard !isClosed else { return }
        control.append(message)
        scheduleDrain()
    }

    /// Drains at the end of this event-loop tick, so that many reads and
    /// messages in one tick share one pass and one flush.
    func scheduleDrain() {
        guard !drainScheduled, !isClosed else { return }
        drainScheduled = true
        eventLoop.assumeIsolated().execute { [weak self] in
            self?.drain()
        }
    }

    /// Writes control messages, then flows' queues round-robin, while the tunnel is writable.
    func drain() {
        drainScheduled = false
        guard !isClosed else { return }
        var wrote = false
        while output.isWritable {
            if let message = control.popFirst() {
                output.write(message)
                wrote = true
                continue
            }
            guard let identifier = ready.popFirst() else { break }
            guard flows[identifier] != nil else { continue }
            flows[identifier]?.isScheduled = false
            if sendQuantum(of: identifier) {
                wrote = true
            }
            afterQueueChange(identifier)
        }
        if wrote {
            output.flush()
        }
    }

    /// Sends up to one quantum of a flow's queue; returns whether anything was written.
    private func sendQuantum(of identifier: TunnelConnectionIdentifier) -> Bool {
        guard let index = flows.index(forKey: identifier), !flows.values[index].peerSuspended else { return false }
        let budget = min(limits.maximumDataChunk, flows.values[index].sendableBytes(limits: limits))
        let splittable = flows.values[index].kind == .tcp
        // The queue is taken out while writing (writes may call back into the
        // multiplexer) and put back after: no copy of it, no overlapping access.
        var queue = FlowOutboundQueue()
        swap(&queue, &flows.values[index].queue)
        var sent = 0
        var wrote = false
        while sent < budget, output.isWritable,
            let item = queue.popFirst(maximumChunk: min(limits.maximumDataChunk, budget - sent), splittable: splittable)
        {
            wrote = true
            switch item {
            case .data(let data, let source):
                sent += data.readableBytes
                statistics.bytesToPeer += UInt64(data.readableBytes)
                metrics?.bytesToClients.increment(by: data.readableBytes)
                output.write(.data(identifier: identifier, payload: data, endpoint: source))
            case .packets(let packets):
                let bytes = packets.reduce(0) { $0 + $1.bytes.readableBytes }
                sent += bytes
                statistics.bytesToPeer += UInt64(bytes)
                metrics?.bytesToClients.increment(by: bytes)
                output.write(.packets(identifier: identifier, packets: packets))
            case .close(let direction):
                output.write(.close(identifier: identifier, direction: direction))
            }
        }
        if let index = flows.index(forKey: identifier) {
            swap(&queue, &flows.values[index].queue)
            flows.values[index].recordSent(sent)
        }
        return wrote
    }

    /// After a flow's queue changed: reschedule it, update its reading, forget it if done.
    func afterQueueChange(_ identifier: TunnelConnectionIdentifier) {
        guard let index = flows.index(forKey: identifier) else { return }
        flows.values[index].updateQueueWatermarks(limits: limits)
        let flow = flows.values[index]
        if flow.sendableBytes(limits: limits) > 0, !flow.queue.isEmpty, !flow.isScheduled, !flow.peerSuspended {
            flows.values[index].isScheduled = true
            ready.append(identifier)
            scheduleDrain()
        }
        updateReading(identifier)
        forgetIfFinished(identifier)
    }

    /// Tells the flow's endpoint to read or not, as its state now wants.
    func updateReading(_ identifier: TunnelConnectionIdentifier) {
        guard let index = flows.index(forKey: identifier), let endpoint = flows.values[index].endpoint else { return }
        let flow = flows.values[index]
        let wanted = flow.wantsReading(tunnelWritable: tunnelWritable, limits: limits)
        if !tunnelWritable, flow.readingEnabled, flow.isOpen {
            pausedForTunnel.append(identifier)
        }
        guard wanted != flow.readingEnabled else { return }
        flows.values[index].readingEnabled = wanted
        endpoint.setReading(wanted)
    }

    /// Forgets a flow whose two streams have ended and whose queue is sent.
    func forgetIfFinished(_ identifier: TunnelConnectionIdentifier) {
        guard let flow = flows[identifier], flow.isFinished, flow.queue.isEmpty, flow.isOpen else { return }
        forget(identifier)
    }

    func forget(_ identifier: TunnelConnectionIdentifier) {
        guard let flow = flows.removeValue(forKey: identifier) else { return }
        bytesPastSuspend -= flow.bytesSinceSuspend
        if flow.isOpen {
            metrics?.flowClosed(flow.kind)
        }
        flow.endpoint?.close()
        logger.debug("flow closed", metadata: ["flow": "\(identifier)"])
    }

    /// Closes a flow at once and tells the peer: used for abuse and expiry.
    func abort(_ identifier: TunnelConnectionIdentifier, reason: String) {
        guard flows[identifier] != nil else { return }
        logger.notice("closing flow", metadata: ["flow": "\(identifier)", "reason": "\(reason)"])
        sendControl(.close(identifier: identifier, direction: .all))
        forget(identifier)
    }
}

/// Answers the tunnel-level requests a server gets.
public protocol TunnelRequestResponder: AnyObject {
    /// The configuration for `fetchConfiguration` (PROTOCOL.md A5).
    func configurationForFetch() -> [String: PropertyListValue]
    /// Resolves a DNS query (B3); completes on the tunnel's event loop.
    func resolveDNS(_ query: ByteBuffer, completion: @escaping (Result<(answer: ByteBuffer, source: String), Error>) -> Void)
}

/// The tunnel closed before a reply arrived.
public struct TunnelClosedError: Error, CustomStringConvertible {
    public init() {}
    public var description: String {
        "the server closed the tunnel before replying (a server with --users needs --user; one with --client-ca needs --cert and --key)"
    }
}

/// Counters of one tunnel.
public struct TunnelStatistics: Sendable, Hashable {
    public var bytesFromPeer: UInt64 = 0
    public var bytesToPeer: UInt64 = 0
    public var flowsOpened: UInt64 = 0
    public var openFlows = 0
}
