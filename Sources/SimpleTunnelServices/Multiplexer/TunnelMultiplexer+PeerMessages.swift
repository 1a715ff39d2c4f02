import Logging
import NIOCore

extension TunnelMultiplexer {
    /// Acts on one message from the peer (PROTOCOL.md A3-A6, B5).
    public func receive(_ inbound: TunnelInboundMessage) {
        guard !isClosed else { return }
        switch inbound {
        case .message(let message):
            receive(message)
        case .rejected(let error):
            if error.disposition != .ignore { counters.metrics?.malformedMessage() }
            switch error.disposition {
            case .openFailure(let identifier):
                peerNotice("refusing malformed open", metadata: ["flow": "\(identifier)", "reason": "\(error)"])
                if case .server = role {
                    counters.metrics?.openResult(.invalidParameter)
                    sendControl(.openResult(identifier: identifier, result: .invalidParameter))
                }
            case .drop:
                peerNotice("dropping malformed message", metadata: ["reason": "\(error)"])
            case .ignore:
                logger.debug("ignoring message", metadata: ["reason": "\(error)"])
            case .closeTunnel:
                // The decoder ends the tunnel itself; it never passes these on.
                logger.error("unexpected fatal message error", metadata: ["reason": "\(error)"])
            }
        }
    }

    private func receive(_ message: TunnelMessage) {
        switch (message, role) {
        case (.data(let identifier, let payload, let endpoint), _):
            receiveData(payload, endpoint: endpoint, for: identifier)
        case (.suspend(let identifier), _):
            guard transition(identifier, { $0.peerSuspended(true) }) != nil else { return dropUnknown(message) }
        case (.resume(let identifier), _):
            guard transition(identifier, { $0.peerSuspended(false) }) != nil else { return dropUnknown(message) }
        case (.close(let identifier, let direction), _):
            receiveClose(direction, for: identifier)
        case (.open(let identifier, let request), .server(let opener, _)):
            receiveOpen(request, for: identifier, opener: opener)
        case (.openResult(let identifier, let result, let configuration, let detail), .client):
            receiveOpenResult(result, configuration: configuration, detail: detail, for: identifier)
        case (.fetchConfiguration(let identifier, _), .server(_, let responder)):
            sendControl(.fetchConfiguration(identifier: identifier, configuration: responder.configurationForFetch()))
        case (.fetchConfiguration(_, let configuration), .client):
            guard let request = client.configurations.popFirst() else { return dropUnexpected(message) }
            request(.success(configuration ?? [:]))
        case (.dns(let identifier, let query, _), .server(_, let responder)):
            responder.resolveDNS(query) { [weak self] result in
                switch result {
                case .success(let reply):
                    self?.sendControl(.dns(identifier: identifier, packet: reply.answer, source: reply.source))
                case .failure(let error):
                    self?.peerNotice("DNS query failed", metadata: ["flow": "\(identifier)", "reason": "\(error)"])
                }
            }
        case (.authenticate, .server):
            // No authentication is configured: every login is accepted (PROTOCOL.md A6).
            sendControl(.authenticateResult(.success))
        case (.authenticateResult(let result), .client):
            guard let request = client.authentications.popFirst() else { return dropUnexpected(message) }
            request(.success(result))
        case (.packets(let identifier, let packets), _):
            guard let flow = flows[identifier], flow.kind == .ip, flow.isOpen, let endpoint = endpoints[identifier]?.endpoint else {
                return dropUnexpected(message)
            }
            let bytes = packets.reduce(0) { $0 + $1.bytes.readableBytes }
            counters.statistics.bytesFromPeer += UInt64(bytes)
            counters.metrics?.bytesFromPeer(bytes)
            endpoint.writePackets(packets)
            markForFlush(identifier)
        case (.open, .client), (.openResult, .server), (.authenticate, .client), (.authenticateResult, .server),
            (.dns, .client):
            dropUnexpected(message)
        }
    }

    // MARK: Data

    private func receiveData(_ payload: ByteBuffer, endpoint destination: TunnelEndpoint?, for identifier: TunnelConnectionIdentifier) {
        guard let kind = flows[identifier]?.kind else {
            return dropUnknown(.data(identifier: identifier, payload: ByteBuffer(), endpoint: nil))
        }
        if kind == .udp, case .server = role, destination == nil {
            peerNotice("dropping UDP data without host and port", metadata: ["flow": "\(identifier)"])
            return
        }
        counters.statistics.bytesFromPeer += UInt64(payload.readableBytes)
        counters.metrics?.bytesFromPeer(payload.readableBytes)
        // Changed in place (through `transition`): a copy of the flow would copy its early data on every append.
        let verdict = transition(identifier) { $0.receiveData(payload, now: .now()) }
        switch verdict {
        case .deliver?:
            let allowance = budgets.suspendAllowance.charge(identifier, bytes: payload.readableBytes)
            switch allowance {
            case .within, .holdPeer:
                // Past the allowance a server still keeps what it read (and reads no more: `suspendAllowanceChanged`).
                endpoints[identifier]?.endpoint.write(payload, to: destination)
                markForFlush(identifier)
                suspendAllowanceChanged()
            case .abortFlow(let reason):
                suspendAllowanceChanged()
                abort(identifier, reason: reason)
            }
        case .tooMuchEarlyData?:
            abort(identifier, reason: "the peer sent more than \(limits.earlyDataAllowance) bytes before the flow opened")
        case .keptUntilOpen?, .drop?, nil:
            // Kept for the open (counted in the tunnel's budget), or harmless after a close.
            break
        }
    }

    func markForFlush(_ identifier: TunnelConnectionIdentifier) {
        // A bulk flow's messages arrive in runs: one flush per run is enough.
        if pending.endpointsToFlush.last != identifier {
            pending.endpointsToFlush.append(identifier)
        }
    }

    // MARK: Close

    private func receiveClose(_ direction: TunnelConnectionCloseDirection, for identifier: TunnelConnectionIdentifier) {
        // A late close for a flow already gone passes quietly.
        transition(identifier, { $0.peerClosed(direction) }) { effect in
            switch effect {
            case .nothing, .deferredUntilOpen, .stopSending:
                // Reading and forgetting follow from the state (`reconcile`).
                break
            case .shutdownLocalOutput:
                endpoints[identifier]?.endpoint.shutdownOutput()
            case .closeAll:
                forget(identifier)
            case .failPendingOpen:
                failPendingOpen(identifier, FlowOpenFailure(.internalError, "the server closed the flow before answering"))
            }
        }
    }

    // MARK: Open (server)

    private func receiveOpen(_ request: TunnelOpenRequest, for identifier: TunnelConnectionIdentifier, opener: FlowOpener) {
        // Metadata is built only when a line is logged: an open is on every flow's path.
        switch flows[identifier]?.reopenVerdict {
        case nil:
            break
        case .refuse?:
            peerNotice("refusing open of an identifier in use", metadata: ["flow": "\(identifier)", "request": "\(request)"])
            counters.metrics?.openResult(.invalidParameter)
            sendControl(.openResult(identifier: identifier, result: .invalidParameter))
            return
        case .replace?:
            // Nothing of the old flow reaches the peer any more: its queue goes, its socket is detached.
            logger.debug("a new open replaces a flow that was closing", metadata: ["flow": "\(identifier)"])
            forget(identifier)
        }
        let kind = FlowState.Kind(request)
        if flows.count >= limits.maximumFlows || (kind == .udp && udp.count >= limits.maximumUDPFlows) {
            peerNotice("refusing open", metadata: ["flow": "\(identifier)", "request": "\(request)", "reason": "flow limit reached"])
            counters.metrics?.openResult(.refused)
            sendControl(.openResult(identifier: identifier, result: .refused))
            return
        }
        addFlow(identifier, .opening(kind, limits: limits.flowLimits, now: .now()), endpoint: nil)
        opener.open(request, identifier: identifier, sink: self) { [weak self] result in
            self?.openCompleted(identifier, request: request, result: result)
        }
    }

    private func openCompleted(_ identifier: TunnelConnectionIdentifier, request: TunnelOpenRequest, result: Result<OpenedFlow, FlowOpenFailure>) {
        guard !isClosed, let flow = flows[identifier] else {
            if case .success(let opened) = result { opened.endpoint.abort() }
            return
        }
        switch result {
        case .failure(let failure):
            peerNotice(
                "open failed",
                metadata: ["flow": "\(identifier)", "request": "\(request)", "result": "\(failure.result)", "reason": "\(failure.reason)"])
            counters.metrics?.openResult(failure.result)
            if flow.openFailedNeedsAnswer() {
                sendControl(.openResult(identifier: identifier, result: failure.result, detail: failure.detail))
            }
            forget(identifier)
        case .success(let opened):
            endpoints[identifier] = EndpointSlot(endpoint: opened.endpoint)
            transition(identifier, { $0.openSucceeded() }) { outcome in
                switch outcome {
                case .opened(let early, let shutdownLocalOutput):
                    counters.statistics.flowsOpened += 1
                    counters.metrics?.flowOpened(flow.kind)
                    counters.metrics?.openResult(.success)
                    // Debug, not info: one line per flow costs a busy server more than the flow itself.
                    logger.debug("flow opened", metadata: ["flow": "\(identifier)", "request": "\(request)"])
                    sendControl(.openResult(identifier: identifier, result: .success, configuration: opened.configuration))
                    for data in early {
                        opened.endpoint.write(data, to: nil)
                    }
                    if !early.isEmpty {
                        opened.endpoint.flush()
                    }
                    if shutdownLocalOutput {
                        opened.endpoint.shutdownOutput()
                    }
                    if flow.kind == .udp {
                        startUDPExpiry()
                    }
                case .cancelled:
                    logger.debug("open completed after the peer closed the flow", metadata: ["flow": "\(identifier)", "request": "\(request)"])
                    forget(identifier, aborting: true)
                }
            }
        }
    }

    // MARK: Open result (client)

    private func receiveOpenResult(
        _ result: TunnelConnectionOpenResult,
        configuration: [String: PropertyListValue]?,
        detail: TunnelOpenResultDetail?,
        for identifier: TunnelConnectionIdentifier
    ) {
        guard let flow = flows[identifier], flow.isAwaitingOpenResult else {
            // The local side gave up before the answer: tell the server we are done.
            if flows[identifier] == nil, result == .success {
                sendControl(.close(identifier: identifier, direction: .all))
            }
            return
        }
        guard result == .success else {
            failPendingOpen(identifier, FlowOpenFailure(result, "the server answered \(result)\(detail.map { ", \($0)" } ?? "")", detail: detail))
            return
        }
        counters.statistics.flowsOpened += 1
        if flow.kind == .udp {
            startUDPExpiry()
        }
        let completion = client.opens.removeValue(forKey: identifier)
        let opened = transition(identifier) { $0.openResultSucceeded() }
        // Checked above: the flow was awaiting this answer.
        assert(opened == true, "an open result for a flow that awaited none")
        completion?(.success(configuration))
    }

    func failPendingOpen(_ identifier: TunnelConnectionIdentifier, _ failure: FlowOpenFailure) {
        // The completion first: a SOCKS proxy must answer on the connection that forgetting the flow closes.
        let completion = client.opens.removeValue(forKey: identifier)
        completion?(.failure(failure))
        forget(identifier)
    }

    // MARK: Unexpected

    private func dropUnknown(_ message: TunnelMessage) {
        logger.debug("dropping message for an unknown flow", metadata: ["flow": "\(message.identifier)", "command": "\(message.command)"])
    }

    private func dropUnexpected(_ message: TunnelMessage) {
        peerNotice(
            "dropping message not valid here",
            metadata: ["flow": "\(message.identifier)", "command": "\(message.command)"]
        )
    }
}
