import NIOCore

extension TunnelMultiplexer {
    /// `transition` for an IP flow: runs one event of its `IPFlowState`,
    /// performs the action, then reconciles the flow. Returns the action, nil
    /// for an identifier that names no flow.
    @discardableResult
    func transitionIP(_ identifier: TunnelConnectionIdentifier, _ event: (inout IPFlowState) -> IPFlowAction) -> IPFlowAction? {
        guard let index = flows.index(of: identifier) else { return nil }
        return transitionIP(identifier, at: index, event)
    }

    /// `transitionIP` of the flow at `index`, just looked up. A flow there of
    /// another kind is our own mistake: callers check the kind first where the
    /// peer names the flow.
    @discardableResult
    func transitionIP(
        _ identifier: TunnelConnectionIdentifier, at index: FlowTable.Index, _ event: (inout IPFlowState) -> IPFlowAction
    ) -> IPFlowAction? {
        let ran = flows.withIP(at: index) { flow in
            let queuedBefore = flow.queue.bufferedBytes
            let action = event(&flow)
            return (action, queued: flow.queue.bufferedBytes - queuedBefore)
        }
        guard let (action, queued) = ran else {
            impossible(identifier, .eventForOtherKind)
            return nil
        }
        perform(action, forIP: identifier)
        account(queued: queued, early: 0)
        if let flow = flows.ip(identifier), flow.hasSomethingToSend, schedule.markReady(identifier) {
            scheduleDrain()
        }
        return action
    }

    /// Carries out what an IP flow's event decided.
    private func perform(_ action: IPFlowAction, forIP identifier: TunnelConnectionIdentifier) {
        switch action {
        case .none, .drop:
            // Callers that count drops read the returned action.
            break
        case .dropWaiting(let count):
            counters.metrics?.packetsDroppedForCongestion(count: count)
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

    /// An IP flow's turn in the tunnel: up to one turn (`turnBytes`) of its packets.
    /// `index` is where the flow was just looked up. Returns whether anything was written.
    func sendIPTurn(of identifier: TunnelConnectionIdentifier, at index: FlowTable.Index) -> Bool {
        var sent = 0
        var wrote = false
        let now = NIODeadline.now()
        let quantum = turn
        // The table may change with each step: only the first uses the index.
        var found: FlowTable.Index? = index
        turn: while sent < quantum, mayWriteFlows {
            guard let index = found ?? flows.index(of: identifier) else { break }
            found = nil
            switch transitionIP(identifier, at: index, { $0.nextToSend(maximumChunk: quantum - sent, now: now) }) {
            case .send(_, let bytes)?:
                wrote = true
                sent += bytes
            case .dropWaiting?:
                continue turn
            default:
                break turn
            }
        }
        schedule.turnEnded(identifier, hasMore: flows.ip(identifier)?.hasSomethingToSend ?? false)
        return wrote
    }
}
