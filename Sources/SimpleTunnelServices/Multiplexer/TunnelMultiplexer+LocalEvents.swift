import Logging
import NIOCore

extension TunnelMultiplexer: FlowEventSink {
    public func flow(_ identifier: TunnelConnectionIdentifier, didRead data: ByteBuffer, from source: TunnelEndpoint?) {
        // A client's TCP flow reads before the server answers and sends up to
        // the early-data allowance at once (PROTOCOL.md A6); NIO may also read
        // a socket to its end when the application half-closes immediately.
        // Whatever exceeds the allowance waits in the queue for the open.
        guard let index = flows.index(forKey: identifier) else { return }
        let flow = flows.values[index]
        guard flow.sending, flow.isOpen || flow.isAwaitingOpenResult else { return }
        // In place, so the queue is not copied on every read.
        flows.values[index].lastActivity = .now()
        flows.values[index].queue.appendData(data, source: source)
        afterQueueChange(identifier)
    }

    /// An IP flow's device cannot be paused per client: when the tunnel falls
    /// behind, packets beyond the flow's high watermark are dropped, as a
    /// congested router would, and TCP inside the tunnel slows down.
    public func flow(_ identifier: TunnelConnectionIdentifier, didReadPackets packets: [TunnelPacket]) {
        guard let index = flows.index(forKey: identifier), !packets.isEmpty else { return }
        let flow = flows.values[index]
        guard flow.isOpen, flow.kind == .ip else { return }
        guard flow.queue.bufferedBytes < limits.flowQueueHighWatermark else {
            metrics?.droppedPackets(.congested, count: packets.count)
            return
        }
        flows.values[index].lastActivity = .now()
        flows.values[index].queue.appendPackets(packets)
        afterQueueChange(identifier)
    }

    public func flowDidReadEndOfFile(_ identifier: TunnelConnectionIdentifier) {
        guard flows[identifier] != nil else { return }
        logger.trace("local end of file", metadata: ["flow": "\(identifier)"])
        if flows[identifier]?.localReadEnded() == true {
            afterQueueChange(identifier)
        }
    }

    public func flow(_ identifier: TunnelConnectionIdentifier, writabilityChanged isWritable: Bool) {
        let pastSuspend = flows[identifier]?.bytesSinceSuspend ?? 0
        guard let command = flows[identifier]?.localWritabilityChanged(isWritable) else { return }
        if command == .resume {
            bytesPastSuspend -= pastSuspend
        }
        switch command {
        case .suspend:
            sendControl(.suspend(identifier: identifier))
        default:
            sendControl(.resume(identifier: identifier))
        }
    }

    public func flowDidClose(_ identifier: TunnelConnectionIdentifier) {
        guard let flow = flows[identifier] else { return }
        logger.trace("local socket closed", metadata: ["flow": "\(identifier)"])
        switch flow.phase {
        case .open:
            _ = flows[identifier]?.localClosed()
            afterQueueChange(identifier)
        case .awaitingOpenResult:
            // The local side gave up first; the server's answer will find no flow.
            failPendingOpen(identifier, FlowOpenFailure(.internalError, "the local connection closed"))
        case .opening, .cancelled:
            // A server endpoint exists only once open; nothing to do.
            break
        }
    }
}

extension TunnelMultiplexer {
    // MARK: Client role

    /// Asks the server to open a flow for a local endpoint; the endpoint is not
    /// read until the server answers. `completion` gets the configuration an IP
    /// flow carries, or why the open failed. Returns the identifier chosen.
    @discardableResult
    public func openFlow(
        _ request: TunnelOpenRequest,
        endpoint: FlowEndpoint,
        completion: @escaping (Result<[String: PropertyListValue]?, FlowOpenFailure>) -> Void
    ) -> TunnelConnectionIdentifier? {
        guard !isClosed else {
            completion(.failure(FlowOpenFailure(.internalError, "the tunnel is closed")))
            return nil
        }
        guard flows.count < limits.maximumFlows else {
            completion(.failure(FlowOpenFailure(.refused, "this tunnel already has \(limits.maximumFlows) flows")))
            return nil
        }
        // Identifiers are never reused within a tunnel, so a late answer can't reach a new flow.
        let identifier = nextIdentifier
        nextIdentifier += 1
        var flow = FlowState(kind: FlowState.Kind(request), phase: .awaitingOpenResult, now: .now())
        flow.endpoint = endpoint
        flows[identifier] = flow
        openCompletions[identifier] = completion
        sendControl(.open(identifier: identifier, request: request))
        updateReading(identifier)
        return identifier
    }

    /// Asks the server for its configuration (PROTOCOL.md A3, command 9).
    public func fetchConfiguration(completion: @escaping (Result<[String: PropertyListValue], TunnelClosedError>) -> Void) {
        guard !isClosed else { return completion(.failure(TunnelClosedError())) }
        configurationRequests.append(completion)
        sendControl(.fetchConfiguration(identifier: 0))
    }

    /// Sends a login (PROTOCOL.md B2).
    public func authenticate(login: String, password: String, completion: @escaping (Result<TunnelConnectionOpenResult, TunnelClosedError>) -> Void) {
        guard !isClosed else { return completion(.failure(TunnelClosedError())) }
        authenticationRequests.append(completion)
        sendControl(.authenticate(login: login, password: password))
    }

    // MARK: UDP expiry

    /// Closes UDP flows idle for longer than the limit; runs while the tunnel has any.
    func startUDPExpiry() {
        guard udpExpiryTask == nil, !isClosed else { return }
        let interval = TimeAmount.nanoseconds(max(limits.udpIdleTimeout.nanoseconds / 4, TimeAmount.milliseconds(100).nanoseconds))
        udpExpiryTask = eventLoop.assumeIsolated().scheduleTask(in: interval) { [weak self] in
            self?.expireIdleUDPFlows()
        }
    }

    private func expireIdleUDPFlows() {
        udpExpiryTask = nil
        let deadline = NIODeadline.now() - limits.udpIdleTimeout
        var udpFlows = 0
        for (identifier, flow) in flows where flow.kind == .udp {
            if flow.isOpen, flow.lastActivity < deadline {
                abort(identifier, reason: "UDP flow idle for \(limits.udpIdleTimeout)")
            } else {
                udpFlows += 1
            }
        }
        if udpFlows > 0 {
            startUDPExpiry()
        }
    }
}
