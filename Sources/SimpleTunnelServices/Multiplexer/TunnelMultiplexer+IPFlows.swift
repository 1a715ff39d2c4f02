import NIOCore

extension TunnelMultiplexer {
    /// `transition` for an IP flow: runs one event of its `IPFlowState`,
    /// performs the action, then reconciles the flow. Returns the action, nil
    /// for an identifier that names no IP flow.
    @discardableResult
    func transitionIP(_ identifier: TunnelConnectionIdentifier, _ event: (inout IPFlowState) -> IPFlowAction) -> IPFlowAction? {
        guard let index = flows.ip.index(forKey: identifier) else { return nil }
        let queuedBefore = flows.ip.values[index].queue.bufferedBytes
        let action = event(&flows.ip.values[index])
        let queued = flows.ip.values[index].queue.bufferedBytes - queuedBefore
        perform(action, forIP: identifier)
        account(queued: queued, early: 0)
        if let flow = flows.ip[identifier], flow.hasSomethingToSend, schedule.markReady(identifier) {
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
            refuseDuplicateOpen(identifier)
        case .completeOpen(let configuration):
            counters.statistics.flowsOpened += 1
            client.opens.removeValue(forKey: identifier)?(.success(configuration))
        case .failPendingOpen(let failure):
            failPendingOpen(identifier, failure)
        case .forget:
            forget(identifier)
        case .impossible(let event):
            impossible(identifier, event)
        }
    }

    /// An IP flow's turn in the tunnel: up to one turn (`turnBytes`) of its packets.
    /// Returns whether anything was written.
    func sendIPTurn(of identifier: TunnelConnectionIdentifier) -> Bool {
        var sent = 0
        var wrote = false
        let now = NIODeadline.now()
        let quantum = turn
        turn: while sent < quantum, mayWriteFlows {
            switch transitionIP(identifier, { $0.nextToSend(maximumChunk: quantum - sent, now: now) }) {
            case .send(_, let bytes)?:
                wrote = true
                sent += bytes
            case .dropWaiting?:
                continue turn
            default:
                break turn
            }
        }
        schedule.turnEnded(identifier, hasMore: flows.ip[identifier]?.hasSomethingToSend ?? false)
        return wrote
    }
}
