import NIOCore

extension TunnelMultiplexer {
    /// `transition` for an IP flow: runs one event of its `IPFlowState`,
    /// performs the action, then reconciles the flow. Returns the action, nil
    /// for an identifier that names no flow.
    @discardableResult
    func transitionIP(_ identifier: TunnelConnectionIdentifier, _ event: (inout IPFlowState) -> IPFlowAction) -> IPFlowAction? {
        var found: FlowTable.Found?
        return transitionIP(identifier, found: &found, event)
    }

    /// `transitionIP` of the flow just found.
    @discardableResult
    func transitionIP(
        _ identifier: TunnelConnectionIdentifier, at found: FlowTable.Found, _ event: (inout IPFlowState) -> IPFlowAction
    ) -> IPFlowAction? {
        var found: FlowTable.Found? = found
        return transitionIP(identifier, found: &found, event)
    }

    /// `transitionIP`, the flow looked for where `found` says, unless a flow
    /// entered or left the table since; `found` is then where it was last
    /// seen. A flow of the other kind is our own mistake: callers check the
    /// kind first where the peer names the flow.
    @discardableResult
    func transitionIP(
        _ identifier: TunnelConnectionIdentifier, found: inout FlowTable.Found?, _ event: (inout IPFlowState) -> IPFlowAction
    ) -> IPFlowAction? {
        guard let (action, queued, at) = flows.runIP(identifier, after: found, event) else {
            if flows.contains(identifier) { impossible(identifier, .eventForOtherKind) }
            return nil
        }
        perform(action, forIP: identifier)
        account(queued: queued, early: 0)
        found = at
        if flows.ipHasSomethingToSend(identifier, after: at), schedule.markReady(identifier) {
            scheduleDrain()
        }
        return action
    }

    /// Carries out what an IP flow's event decided.
    private func perform(_ action: IPFlowAction, forIP identifier: TunnelConnectionIdentifier) {
        switch action {
        case .none:
            break
        case .dropRead(let count), .dropWaiting(let count):
            counters.metrics?.packetsDroppedForCongestion(count: count)
        case .dropFromPeer:
            dropUnexpected(.packets, for: identifier)
        case .writeLocal(let packets):
            let bytes = packets.reduce(0) { $0 + $1.bytes.readableBytes }
            counters.statistics.bytesFromPeer += UInt64(bytes)
            counters.metrics?.bytesFromPeer(bytes)
            meterReceived(bytes)
            if case .ip(let endpoint)? = endpoints[identifier]?.end {
                endpoint.writePackets(packets)
            }
        case .send(let packets, let bytes):
            countSent(bytes)
            output.write(.packets(identifier: identifier, packets: packets))
        case .confirmOpen(let configuration):
            confirmOpen(identifier, kind: .ip, early: [], configuration: configuration, shutdownLocalOutput: false)
        case .endFailedOpen(let answer):
            endFailedOpen(identifier, answer: answer)
        case .refuseDuplicateOpen:
            refuseDuplicateOpen(identifier, kind: .ip)
        case .completeOpen(let configuration):
            completeOpen(identifier, kind: .ip, configuration: configuration, shutdownLocalOutput: false)
        case .failPendingOpen(let failure):
            failPendingOpen(identifier, failure)
        case .forget:
            forget(identifier)
        case .impossible(let event):
            impossible(identifier, event)
        }
    }

    /// An IP flow's turn in the tunnel: up to one turn (`turnBytes`) of its
    /// packets, `first` where it was just found. Returns whether anything was written.
    func sendIPTurn(of identifier: TunnelConnectionIdentifier, at first: FlowTable.Found) -> Bool {
        var sent = 0
        var wrote = false
        let now = NIODeadline.now()
        let quantum = turn
        var found: FlowTable.Found? = first
        turn: while sent < quantum, mayWriteFlows {
            switch transitionIP(identifier, found: &found, { $0.nextToSend(maximumChunk: quantum - sent, now: now) }) {
            case .send(_, let bytes)?:
                wrote = true
                sent += bytes
            case .dropWaiting?:
                continue turn
            default:
                break turn
            }
        }
        schedule.turnEnded(identifier, hasMore: flows.ipHasSomethingToSend(identifier, after: found))
        return wrote
    }
}
