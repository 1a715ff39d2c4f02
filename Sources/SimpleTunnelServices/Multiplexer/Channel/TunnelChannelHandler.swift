import Logging
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The last handler of a tunnel's pipeline: hands decoded messages to the
/// tunnel's `TunnelMultiplexer` and lets it write messages back. Ends the
/// tunnel on a fault that B5 says ends it, logging the reason.
public final class TunnelChannelHandler: ChannelDuplexHandler, TunnelOutput {
    public typealias InboundIn = TunnelInboundMessage
    public typealias OutboundIn = TunnelMessage
    public typealias OutboundOut = TunnelMessage

    private let makeRole: () -> TunnelMultiplexer.Role
    private let limits: TunnelMultiplexer.Limits
    private var liveness: LivenessMonitor
    private let metrics: (any TunnelMultiplexerMetrics)?
    private let serverBudget: ServerBufferBudget?
    private var livenessCheck: Scheduled<Void>?
    private var logger: Logger
    private var context: ChannelHandlerContext?
    private var receivedAny = false
    private var onActive: ((TunnelMultiplexer) -> Void)?
    private var closeReason: String?
    /// Whether the multiplexer wants the peer read, as it last said (`peerReadingChanged`).
    private var readsPeer = true
    /// A read NIO asked for while the multiplexer held the peer back.
    private var readHeld = false
    /// The link's rate and the sizes that follow, from the tunnel socket's
    /// TCP_INFO, read at most every `paceInterval` as the tunnel writes.
    private var pace = LinkPace()
    private var appliedSizes = LinkPace().sizes
    private var nextPaceReading = NIODeadline.uptimeNanoseconds(0)
    /// Often enough to follow a link whose rate changes (a phone moving
    /// between cells) within a few round trips; rarely enough that the
    /// `getsockopt` costs nothing beside the writes between two readings.
    static let paceInterval: TimeAmount = .milliseconds(20)
    /// What the last reading saw queued in front of the link, and the room it allowed.
    private var lastQueueReading: TunnelQueueReading?
    /// The most seen queued in front of the link (channel and kernel unsent)
    /// since the last "link queue" line, logged at debug once a second at most.
    private var queuePeak = 0
    /// The largest room in force over the same time, what the peak is held against.
    private var roomPeak = 0
    private var nextQueueLine = NIODeadline.uptimeNanoseconds(0)
    /// On a slow link, what may still be handed down before the next look at
    /// what waits in front of it, and the look scheduled while nothing may.
    private var gate = LinkQueueGate()
    private var gateLook: Scheduled<Void>?
    /// The tunnel's TLS, whose unencrypted plaintext waits in front of the link too.
    private weak var tls: TLSHandler?

    /// The tunnel's multiplexer; exists once the handler is in a pipeline.
    public private(set) var multiplexer: TunnelMultiplexer?

    /// The last keepalive probe's round trip (client side).
    public var roundTrip: TimeAmount? { liveness.roundTrip }

    /// - Parameters:
    ///   - onActive: called once the multiplexer exists and the tunnel is active.
    public init(
        role: @escaping () -> TunnelMultiplexer.Role,
        limits: TunnelMultiplexer.Limits = .init(),
        liveness: LivenessMonitor.Policy = .init(),
        metrics: (any TunnelMultiplexerMetrics)? = nil,
        serverBudget: ServerBufferBudget? = nil,
        logger: Logger,
        onActive: ((TunnelMultiplexer) -> Void)? = nil
    ) {
        self.makeRole = role
        self.limits = limits
        self.liveness = LivenessMonitor(policy: liveness, now: .now())
        self.metrics = metrics
        self.serverBudget = serverBudget
        self.logger = logger
        self.onActive = onActive
    }

    // MARK: TunnelOutput

    public var isWritable: Bool {
        guard let context, context.channel.isWritable else { return false }
        return gate.isOpen || lookAtLinkQueue(context: context)
    }

    public var writableBytes: Int { gate.allowance }

    public func write(_ message: TunnelMessage) {
        if gate.isCounting { gate.handedDown(Self.gatedSize(of: message)) }
        context?.write(wrapOutboundOut(message), promise: nil)
    }

    /// A message's bytes on the wire, near enough to count against the room:
    /// its payload and a frame's worth of the rest. IP packets pass ungated:
    /// their flow's queue has its own AQM (`CoDel`), the connections inside
    /// pace themselves, and a turn of them is at most the room; held by the
    /// gate as well, an echo through the IP tunnel waited 5-10 ms longer
    /// beside a download at 10 Mbit/s (Benchmarks/latency-under-load.sh).
    static func gatedSize(of message: TunnelMessage) -> Int {
        let frame = 64
        switch message {
        case .data(_, let payload, _): return payload.readableBytes + frame
        case .packets: return 0
        default: return frame
        }
    }

    public func flush() {
        guard let context else { return }
        context.flush()
        let now = NIODeadline.now()
        if now >= nextPaceReading {
            readPace(context: context, now: now)
        }
    }

    /// What waits in front of the link now, for `status`: the program's own
    /// queues read live, the kernel's from the last TCP_INFO reading (at most
    /// 20 ms old while the tunnel writes). Nil before any reading.
    public var queueNow: TunnelQueueReading? {
        guard var reading = lastQueueReading, let context else { return lastQueueReading }
        reading.turnBytes = multiplexer?.turnBytes ?? 0
        reading.flowQueueBytes = multiplexer?.queuedFlowBytes ?? 0
        let tls = self.tls ?? (try? context.pipeline.syncOperations.handler(type: TLSHandler.self))
        reading.tlsPlaintextBytes = tls?.bufferedPlaintextBytes ?? 0
        reading.channelBytes = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? reading.channelBytes
        return reading
    }

    // MARK: Pace

    /// The gate is spent: reads what waits in front of the link now and lets
    /// the gate say whether more may go, or when to look again. True if it may.
    private func lookAtLinkQueue(context: ChannelHandlerContext) -> Bool {
        guard gateLook == nil else { return false }
        guard let reading = TCPInfoReading.read(from: context.channel) else {
            _ = gate.looked(queued: 0, sizes: .fastest, maximumRoom: pace.policy.maximumBytes, rate: nil)
            return true
        }
        var mayWrite = true
        // On the channel's own loop the reading completes at once.
        reading.assumeIsolated().whenComplete { [self] result in
            guard case .success(let raw) = result, let reading = raw.reading else {
                _ = gate.looked(queued: 0, sizes: .fastest, maximumRoom: pace.policy.maximumBytes, rate: nil)
                return
            }
            let now = NIODeadline.now()
            paced(reading, at: now)
            let channelBytes = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
            let queued = (tls?.bufferedPlaintextBytes ?? 0) + channelBytes + Int(reading.unsentBytes ?? 0)
            switch gate.looked(queued: queued, sizes: appliedSizes, maximumRoom: pace.policy.maximumBytes, rate: pace.rate) {
            case .write:
                break
            case .wait(let delay):
                mayWrite = false
                gateLook = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [weak self] in
                    self?.gateLookDue()
                }
            }
        }
        return mayWrite
    }

    /// Time to look again: if more may go now, the multiplexer drains.
    private func gateLookDue() {
        gateLook = nil
        guard let context, context.channel.isWritable else { return }
        if lookAtLinkQueue(context: context) {
            multiplexer?.tunnelWritabilityChanged(true)
        }
    }

    private func readPace(context: ChannelHandlerContext, now: NIODeadline) {
        nextPaceReading = now + Self.paceInterval
        guard let reading = TCPInfoReading.read(from: context.channel) else {
            // No socket under this channel (tests in memory): nothing to pace.
            nextPaceReading = .distantFuture
            return
        }
        // On the channel's own loop the reading completes at once.
        reading.assumeIsolated().whenComplete { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let raw):
                if let reading = raw.reading { self.paced(reading, at: now) }
            case .failure:
                // Not a TCP socket (a Unix one): its buffers keep the fixed sizes.
                self.nextPaceReading = .distantFuture
            }
        }
    }

    private func paced(_ reading: TCPInfoReading, at now: NIODeadline) {
        guard let context else { return }
        pace.update(reading, at: now)
        let sizes = pace.sizes
        let buffered = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        lastQueueReading = TunnelQueueReading(
            rate: pace.rate, room: appliedSizes.room, unsentLowWatermark: appliedSizes.unsentLowWatermark,
            channelBytes: buffered, unsentBytes: reading.unsentBytes.map(Int.init), bytesInFlight: reading.bytesInFlight)
        if logger.logLevel <= .debug {
            queuePeak = max(queuePeak, buffered + Int(reading.unsentBytes ?? 0))
            roomPeak = max(roomPeak, appliedSizes.room)
            if now >= nextQueueLine {
                logger.debug(
                    "link queue",
                    metadata: [
                        "peak-queued-bytes": "\(queuePeak)", "room-bytes": "\(roomPeak)",
                        "rate-bytes-per-second": "\(pace.rate ?? 0)", "in-flight-bytes": "\(reading.bytesInFlight)",
                    ])
                queuePeak = 0
                roomPeak = appliedSizes.room
                nextQueueLine = now + .seconds(1)
            }
        }
        guard sizes != appliedSizes else { return }
        appliedSizes = sizes
        gate.resized(to: sizes, maximumRoom: pace.policy.maximumBytes)
        multiplexer?.turnBytes = sizes.turn
        tls = try? context.pipeline.syncOperations.handler(type: TLSHandler.self)
        tls?.batchSize = sizes.tlsBatch
        do {
            try context.channel.syncOptions?.setOption(.writeBufferWaterMark, value: sizes.channelWaterMark)
            try context.channel.syncOptions?.setOption(
                ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: TCP_NOTSENT_LOWAT)),
                value: SocketOptionValue(sizes.unsentLowWatermark))
        } catch {
            logger.debug("cannot resize the tunnel socket's buffers", metadata: ["error": "\(error)"])
        }
        logger.debug(
            "link pace",
            metadata: [
                "rate-bytes-per-second": "\(pace.rate ?? 0)", "room-bytes": "\(sizes.room)",
                "unsent-lowat-bytes": "\(sizes.unsentLowWatermark)", "queued-bytes": "\(buffered + Int(reading.unsentBytes ?? 0))",
            ])
    }

    // MARK: Pipeline

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let multiplexer = TunnelMultiplexer(role: makeRole(), output: self, eventLoop: context.eventLoop, limits: limits, metrics: metrics, serverBudget: serverBudget, logger: logger)
        self.multiplexer = multiplexer
        if context.channel.isActive {
            becameActive()
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        livenessCheck?.cancel()
        gateLook?.cancel()
        gateLook = nil
        multiplexer?.tunnelClosed()
        self.context = nil
    }

    public func channelActive(context: ChannelHandlerContext) {
        becameActive()
        context.fireChannelActive()
    }

    private func becameActive() {
        scheduleLivenessCheck()
        guard let multiplexer, let onActive else { return }
        self.onActive = nil
        onActive(multiplexer)
    }

    private func scheduleLivenessCheck() {
        guard livenessCheck == nil, let interval = liveness.policy.checkInterval, let context else { return }
        livenessCheck = context.eventLoop.assumeIsolated().scheduleTask(in: interval) { [weak self] in
            self?.checkLiveness()
        }
    }

    private func checkLiveness() {
        livenessCheck = nil
        switch liveness.tick(at: .now(), holdsFlows: multiplexer?.holdsFlows ?? false) {
        case .nothing:
            break
        case .sendProbe:
            multiplexer?.fetchConfiguration { [weak self] result in
                if case .success = result {
                    self?.liveness.probeAnswered(at: .now())
                }
            }
        case .peerDead(let reason):
            closeTunnel(reason: reason)
            return
        }
        scheduleLivenessCheck()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let authenticated = event as? any TunnelLoginEvent {
            // A login is a first message; every later line names who logged in.
            receivedAny = true
            logger[metadataKey: "login"] = "\(PeerText.quoted(authenticated.login))"
            multiplexer?.logger = logger
        }
        if let session = (event as? TLSSessionEstablishedEvent)?.session {
            // Every later line of this tunnel names who is at the other end.
            logger[metadataKey: "tls"] = "\(session.protocolVersion) \(session.cipher)"
            if let subject = session.peerCertificateSubject, session.peerCertificateVerified {
                logger[metadataKey: "tls-subject"] = "\(PeerText.quoted(subject, limit: 256))"
            }
            multiplexer?.logger = logger
            logger.info("TLS established")
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        receivedAny = true
        multiplexer?.receive(unwrapInboundIn(data))
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        // Once per burst is enough to know the peer is alive.
        liveness.heard(at: .now())
        multiplexer?.peerReadBurstEnded()
        context.fireChannelReadComplete()
    }

    /// The peer is read only while what it makes the multiplexer hold stays
    /// within budget (early data, replies it does not read).
    public func read(context: ChannelHandlerContext) {
        if readsPeer {
            context.read()
        } else {
            readHeld = true
        }
    }

    public func peerReadingChanged(_ reading: Bool) {
        readsPeer = reading
        guard reading, readHeld, let context else { return }
        readHeld = false
        context.read()
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        multiplexer?.tunnelWritabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        livenessCheck?.cancel()
        gateLook?.cancel()
        gateLook = nil
        if let multiplexer {
            let statistics = multiplexer.currentStatistics
            multiplexer.tunnelClosed()
            var metadata: Logger.Metadata = [
                "bytes-from-peer": "\(statistics.bytesFromPeer)",
                "bytes-to-peer": "\(statistics.bytesToPeer)",
                "flows-opened": "\(statistics.flowsOpened)",
            ]
            if let closeReason {
                metadata["reason"] = "\(closeReason)"
            }
            // A connection that never became a tunnel has said why it closed already, if at all.
            logger.log(level: receivedAny ? .info : .debug, "tunnel closed", metadata: metadata)
        }
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: Error) {
        closeTunnel(reason: String(describing: error))
    }

    /// Connections that never became tunnels (failed handshakes, silent
    /// sockets) can come as fast as a peer opens them: their closing lines share
    /// one limit across the server.
    private static let unstartedCloseLog = NIOLockedValueBox(LineRateLimiter(interval: .seconds(10)))

    /// Ends the tunnel, logging why (once).
    public func closeTunnel(reason: String) {
        guard closeReason == nil, let context else { return }
        closeReason = reason
        if receivedAny {
            logger.notice("closing tunnel", metadata: ["reason": "\(reason)"])
        } else if let suppressed = Self.unstartedCloseLog.withLockedValue({ $0.admit() }) {
            logger.notice(
                "closing connection before its first message", metadata: ["reason": "\(reason)", "suppressed": "\(suppressed)"])
        }
        context.close(promise: nil)
    }
}
