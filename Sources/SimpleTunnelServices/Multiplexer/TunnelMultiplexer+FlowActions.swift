import Logging
import NIOCore

extension TunnelMultiplexer {
    /// Runs one event of a flow and performs the action it answers with
    /// (which may forget the flow), then reconciles the flow with its new
    /// state. Every change to a flow's state goes through here. Returns the
    /// action, nil for a flow not (or no longer) known.
    /// Always inlined: it runs once or twice per message, and left to the
    /// optimiser's budget it was not, at about 500 instructions a message.
    @discardableResult
    @inline(__always)
    func transition(_ identifier: TunnelConnectionIdentifier, _ event: (inout FlowState) -> FlowAction) -> FlowAction? {
        var found: FlowTable.Found?
        var known: FlowTable.KnownNeeds?
        return transition(identifier, found: &found, known: &known, event)
    }

    /// `transition` of the flow just found.
    @discardableResult
    @inline(__always)
    func transition(_ identifier: TunnelConnectionIdentifier, at found: FlowTable.Found, _ event: (inout FlowState) -> FlowAction) -> FlowAction? {
        var found: FlowTable.Found? = found
        var known: FlowTable.KnownNeeds?
        return transition(identifier, found: &found, known: &known, event)
    }

    /// `transition`, the flow looked for where `found` says, unless a flow
    /// entered or left the table since; `found` is then where it was last
    /// seen, and `known` what it needed then, for the caller's next step.
    /// A flow of the other kind is our own
    /// mistake: callers check the kind first where the peer names the flow.
    @discardableResult
    @inline(__always)
    func transition(
        _ identifier: TunnelConnectionIdentifier, found: inout FlowTable.Found?, known: inout FlowTable.KnownNeeds?,
        _ event: (inout FlowState) -> FlowAction
    ) -> FlowAction? {
        guard let (run, at) = flows.runStream(identifier, after: found, event) else {
            if flows.contains(identifier) { impossible(identifier, .eventForOtherKind) }
            return nil
        }
        perform(run.action, for: identifier, kind: run.kind)
        account(queued: run.queuedChange, early: run.earlyChange)
        found = reconcile(identifier, after: at, known: run.needs)
        known = run.needs
        return run.action
    }

    /// Carries out what a flow's event decided.
    private func perform(_ action: FlowAction, for identifier: TunnelConnectionIdentifier, kind: FlowState.Kind) {
        switch action {
        case .none, .drop:
            break
        case .dropLocalRead(let bytes):
            logger.trace("dropped local data for a flow that no longer sends", metadata: ["flow": "\(identifier)", "bytes": "\(bytes)"])
        case .writeLocal(let payload, let destination):
            let (verdict, change) = budgets.chargeDelivered(identifier, bytes: payload.readableBytes)
            switch verdict {
            case .within, .holdPeer:
                // Past the allowance a server still keeps what it read (and reads no more: `change` says so).
                endpoints[identifier]?.end.data?.write(payload, to: destination)
                markForFlush(identifier)
                apply(change)
            case .abortFlow(let reason):
                apply(change)
                abort(identifier, reason: reason)
            }
        case .send(let item):
            switch item {
            case .data(let data, let source):
                countSent(data.readableBytes)
                output.write(.data(identifier: identifier, payload: data, endpoint: source))
            case .close(let direction):
                output.write(.close(identifier: identifier, direction: direction))
            }
        case .suspendPeer:
            apply(budgets.suspendSent(identifier))
            sendControl(.suspend(identifier: identifier))
        case .resumePeer:
            sendControl(.resume(identifier: identifier))
        case .shutdownLocalOutput:
            shutdownLocalOutput(identifier)
        case .confirmOpen(let early, let configuration, let shutdownLocalOutput):
            confirmOpen(identifier, kind: kind, early: early, configuration: configuration, shutdownLocalOutput: shutdownLocalOutput)
        case .endFailedOpen(let answer):
            endFailedOpen(identifier, answer: answer)
        case .refuseDuplicateOpen:
            refuseDuplicateOpen(identifier, kind: kind)
        case .completeOpen(let configuration, let shutdownLocalOutput):
            completeOpen(identifier, kind: kind, configuration: configuration, shutdownLocalOutput: shutdownLocalOutput)
        case .failPendingOpen(let failure):
            failPendingOpen(identifier, failure)
        case .forget(let aborting):
            forget(identifier, aborting: aborting)
        case .forgetForNewOpen:
            forget(identifier, aborting: false)
            // Nothing of the old flow reaches the peer any more: its queue went, its socket is detached.
            logger.debug("a new open replaces a flow that was closing", metadata: ["flow": "\(identifier)"])
        case .peerFault(let reason):
            abort(identifier, reason: reason)
        case .impossible(let event):
            impossible(identifier, event)
        }
    }

    /// Server: the open succeeded; the endpoint is in the table already.
    func confirmOpen(
        _ identifier: TunnelConnectionIdentifier, kind: TunnelFlowKind, early: [ByteBuffer], configuration: [String: PropertyListValue]?,
        shutdownLocalOutput: Bool
    ) {
        counters.statistics.flowsOpened += 1
        counters.metrics?.flowOpened(kind)
        counters.metrics?.openResult(.success)
        sendControl(.openResult(identifier: identifier, result: .success, configuration: configuration))
        if let endpoint = endpoints[identifier]?.end.data, !early.isEmpty {
            for data in early {
                endpoint.write(data, to: nil)
            }
            endpoint.flush()
        }
        if shutdownLocalOutput {
            self.shutdownLocalOutput(identifier)
        }
        if kind == .udp {
            startUDPExpiry()
        }
    }

    /// Client: the server answered our open with success.
    func completeOpen(
        _ identifier: TunnelConnectionIdentifier, kind: TunnelFlowKind, configuration: [String: PropertyListValue]?, shutdownLocalOutput: Bool
    ) {
        counters.statistics.flowsOpened += 1
        if kind == .udp {
            startUDPExpiry()
        }
        client.opens.removeValue(forKey: identifier)?(.success(configuration))
        if shutdownLocalOutput {
            self.shutdownLocalOutput(identifier)
        }
    }

    /// Ends the peer-to-local stream on the socket. Only a byte stream has
    /// one to end: a datagram socket just stops getting what the peer sends.
    private func shutdownLocalOutput(_ identifier: TunnelConnectionIdentifier) {
        if case .tcp(let endpoint)? = endpoints[identifier]?.end {
            endpoint.shutdownOutput()
        }
    }

    /// Server: the open failed, or the peer cancelled it; the answer (when the
    /// peer waits for one), then the identifier is free again.
    func endFailedOpen(_ identifier: TunnelConnectionIdentifier, answer: FlowOpenFailure?) {
        if let answer {
            sendControl(.openResult(identifier: identifier, result: answer.result, detail: answer.detail))
        }
        forget(identifier)
    }

    /// Server: a second `open` of an identifier in use (PROTOCOL.md A6) is answered 1; the flow stays.
    func refuseDuplicateOpen(_ identifier: TunnelConnectionIdentifier, kind: TunnelFlowKind) {
        peerNotice("refusing open of an identifier in use", metadata: ["flow": "\(identifier)", "kind": "\(kind)"])
        counters.metrics?.openResult(.invalidParameter)
        sendControl(.openResult(identifier: identifier, result: .invalidParameter))
    }

    func failPendingOpen(_ identifier: TunnelConnectionIdentifier, _ failure: FlowOpenFailure) {
        // The completion first: a SOCKS proxy must answer on the connection that forgetting the flow closes.
        let completion = client.opens.removeValue(forKey: identifier)
        completion?(.failure(failure))
        forget(identifier)
    }

    func markForFlush(_ identifier: TunnelConnectionIdentifier) {
        // A bulk flow's messages arrive in runs: one flush per run is enough.
        if pending.endpointsToFlush.last != identifier {
            pending.endpointsToFlush.append(identifier)
        }
    }
}

extension FlowOutboundQueue.Item {
    /// Bytes of data this item carries to the peer.
    var payloadBytes: Int {
        switch self {
        case .data(let data, _): data.readableBytes
        case .close: 0
        }
    }
}
