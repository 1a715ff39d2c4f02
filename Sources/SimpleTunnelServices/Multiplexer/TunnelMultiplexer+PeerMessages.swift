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
            receiveSuspended(true, for: identifier, message)
        case (.resume(let identifier), _):
            receiveSuspended(false, for: identifier, message)
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
        case (.authenticateResult(let result, let detail), .client):
            guard let request = client.authentications.popFirst() else { return dropUnexpected(message) }
            request(.success(TunnelLoginAnswer(result: result, detail: detail)))
        case (.packets(let identifier, let packets), _):
            // Packets for a TCP or UDP flow are the peer's mistake, not ours: dropped like those for no flow.
            guard case (.ip?, let found)? = flows.kind(identifier) else { return dropUnexpected(message) }
            // Those for a flow not open yet are dropped (and logged) where the action is carried out.
            transitionIP(identifier, at: found) { $0.receivePackets(packets) }
        case (.open, .client), (.openResult, .server), (.authenticate, .client), (.authenticateResult, .server),
            (.dns, .client):
            dropUnexpected(message)
        }
    }

    // MARK: Data

    private func receiveData(_ payload: ByteBuffer, endpoint destination: TunnelEndpoint?, for identifier: TunnelConnectionIdentifier) {
        guard let (kind, found) = flows.streamKind(identifier) else {
            return dropUnknown(.data(identifier: identifier, payload: ByteBuffer(), endpoint: nil))
        }
        if kind == .udp, case .server = role, destination == nil {
            peerNotice("dropping UDP data without host and port", metadata: ["flow": "\(identifier)"])
            return
        }
        counters.statistics.bytesFromPeer += UInt64(payload.readableBytes)
        counters.metrics?.bytesFromPeer(payload.readableBytes)
        meterReceived(payload.readableBytes)
        // Changed in place (through `transition`): a copy of the flow would copy its early data on every append.
        transition(identifier, at: found) { $0.receiveData(payload, to: destination, now: .now()) }
    }

    // MARK: Suspend and resume

    private func receiveSuspended(_ suspended: Bool, for identifier: TunnelConnectionIdentifier, _ message: TunnelMessage) {
        let known = deliver(to: identifier, stream: { $0.peerSuspended(suspended) }, ip: { $0.peerSuspended(suspended) })
        if !known { dropUnknown(message) }
    }

    // MARK: Close

    private func receiveClose(_ direction: TunnelConnectionCloseDirection, for identifier: TunnelConnectionIdentifier) {
        // A late close for a flow already gone passes quietly.
        deliver(to: identifier, stream: { $0.peerClosed(direction) }, ip: { $0.peerClosed(direction) })
    }

    // MARK: Open (server)

    private func receiveOpen(_ request: TunnelOpenRequest, for identifier: TunnelConnectionIdentifier, opener: FlowOpener) {
        // A second open of an identifier in use is refused (and logged) where its action is carried out.
        if let (kind, found) = flows.kind(identifier) {
            switch kind {
            case .ip?:
                // An IP flow never half-closes: its identifier is never the peer's to reuse while it runs.
                transitionIP(identifier, at: found) { $0.peerReopened() }
                return
            case .stream?:
                // A flow that was closing is forgotten (and that logged) where the action is carried out.
                guard case .forgetForNewOpen? = transition(identifier, at: found, { $0.peerReopened() }) else { return }
            case nil:
                return impossible(identifier, .phaseBeingModified)
            }
        }
        let kind = FlowState.Kind(request)
        if flows.count >= limits.maximumFlows || (kind == .udp && udp.count >= limits.maximumUDPFlows) {
            peerNotice("refusing open", metadata: ["flow": "\(identifier)", "request": "\(request)", "reason": "flow limit reached"])
            counters.metrics?.openResult(.refused)
            sendControl(.openResult(identifier: identifier, result: .refused))
            return
        }
        if kind == .ip {
            addIPFlow(identifier, .opening(queueLimit: limits.ipQueueLimit), endpoint: nil)
        } else {
            addFlow(identifier, .opening(kind, limits: limits.flowLimits, now: .now()), endpoint: nil)
        }
        opener.open(request, reporter: FlowReporter(identifier: identifier, sink: self)) { [weak self] result in
            self?.openCompleted(identifier, request: request, result: result)
        }
    }

    private func openCompleted(_ identifier: TunnelConnectionIdentifier, request: TunnelOpenRequest, result: Result<OpenedFlow, FlowOpenFailure>) {
        guard !isClosed, flows.contains(identifier) else {
            if case .success(let opened) = result { opened.endpoint.close(aborting: true) {} }
            return
        }
        switch result {
        case .failure(let failure):
            peerNotice(
                "open failed",
                metadata: ["flow": "\(identifier)", "request": "\(request)", "result": "\(failure.result)", "reason": "\(failure.reason)"])
            counters.metrics?.openResult(failure.result)
            deliver(to: identifier, stream: { $0.openFailed(failure) }, ip: { $0.openFailed(failure) })
        case .success(let opened):
            assert(opened.endpoint.kind == FlowState.Kind(request), "the opener made a \(opened.endpoint.kind) end for \(request)")
            endpoints[identifier] = EndpointSlot(end: opened.endpoint)
            // Debug, not info: one line per flow costs a busy server more than the flow itself.
            logger.debug("open completed", metadata: ["flow": "\(identifier)", "request": "\(request)"])
            deliver(
                to: identifier, stream: { $0.openSucceeded(configuration: opened.configuration) },
                ip: { $0.openSucceeded(configuration: opened.configuration) })
        }
    }

    // MARK: Open result (client)

    private func receiveOpenResult(
        _ result: TunnelConnectionOpenResult,
        configuration: [String: PropertyListValue]?,
        detail: TunnelOpenResultDetail?,
        for identifier: TunnelConnectionIdentifier
    ) {
        guard flows.contains(identifier) else {
            // The local side gave up before the answer: tell the server we are done.
            if result == .success {
                sendControl(.close(identifier: identifier, direction: .all))
            }
            return
        }
        deliver(
            to: identifier,
            stream: { $0.openResultReceived(result, configuration: configuration, detail: detail) },
            ip: { $0.openResultReceived(result, configuration: configuration, detail: detail) })
    }

    // MARK: Unexpected

    private func dropUnknown(_ message: TunnelMessage) {
        logger.debug("dropping message for an unknown flow", metadata: ["flow": "\(message.identifier)", "command": "\(message.command)"])
    }

    private func dropUnexpected(_ message: TunnelMessage) {
        dropUnexpected(message.command, for: message.identifier)
    }

    func dropUnexpected(_ command: TunnelCommand, for identifier: TunnelConnectionIdentifier) {
        peerNotice("dropping message not valid here", metadata: ["flow": "\(identifier)", "command": "\(command)"])
    }
}
