/// One flow of the tunnel, with the machine of its kind: a TCP or UDP flow's
/// `FlowState`, an IP flow's `IPFlowState`.
enum FlowEntry {
    case stream(FlowState)
    case ip(IPFlowState)
    /// Only inside `runStream` and `runIP`, while an event changes the
    /// machine in place: the machine is moved out of the entry, so its queue
    /// has one owner and is not copied, and moved back after. No event ever
    /// starts or ends in it.
    case modifying

    enum Kind: Hashable {
        case stream, ip
    }

    var kind: Kind? {
        switch self {
        case .stream: .stream
        case .ip: .ip
        case .modifying: nil
        }
    }

    var stream: FlowState? {
        if case .stream(let flow) = self { return flow }
        return nil
    }

    var ip: IPFlowState? {
        if case .ip(let flow) = self { return flow }
        return nil
    }

    /// Runs `event` on the TCP or UDP flow, in place; nil, and nothing run,
    /// for a flow of another kind.
    @inline(__always)
    mutating func runStream(_ event: (inout FlowState) -> FlowAction) -> StreamEventRun? {
        guard case .stream = self else { return nil }
        // The entry gives its flow up while it changes, moved out (neither
        // copied nor retained): its queue has one owner and grows in place.
        guard case .stream(var flow) = take() else { return nil }
        let queuedBefore = flow.queue.bufferedBytes
        let earlyBefore = flow.earlyDataBytes
        let action = event(&flow)
        let run = StreamEventRun(
            action: action, kind: flow.kind, queuedChange: flow.queue.bufferedBytes - queuedBefore, earlyChange: flow.earlyDataBytes - earlyBefore,
            needs: FlowTable.KnownNeeds(needs: flow.needs))
        // `consume`: without it the optimiser keeps a copy of the flow, and retains what it holds.
        self = .stream(consume flow)
        return run
    }

    /// Runs `event` on the IP flow, in place; nil, and nothing run, for a
    /// flow of another kind.
    @inline(__always)
    mutating func runIP(_ event: (inout IPFlowState) -> IPFlowAction) -> (action: IPFlowAction, queuedChange: Int)? {
        guard case .ip = self else { return nil }
        guard case .ip(var flow) = take() else { return nil }
        let queuedBefore = flow.queue.bufferedBytes
        let action = event(&flow)
        let queuedChange = flow.queue.bufferedBytes - queuedBefore
        self = .ip(consume flow)
        return (action, queuedChange)
    }

    /// The entry, `.modifying` left in its place: a move, so nothing of it
    /// is retained (binding the payload of a copy would share the queue's
    /// buffer, and its next append would copy it).
    @inline(__always)
    private mutating func take() -> FlowEntry {
        var taken = FlowEntry.modifying
        swap(&self, &taken)
        return consume taken
    }

    /// Reads the TCP or UDP flow; nil for a flow of another kind. (Binding
    /// the payload copies it, retaining what it holds: an event's own
    /// answer carries what is read after it, `StreamEventRun.needs`.)
    @inline(__always)
    mutating func readStream<Result>(_ read: (FlowState) -> Result) -> Result? {
        if case .stream(let flow) = self { return read(flow) }
        return nil
    }

    /// Reads the IP flow; nil for a flow of another kind.
    @inline(__always)
    mutating func readIP<Result>(_ read: (IPFlowState) -> Result) -> Result? {
        if case .ip(let flow) = self { return read(flow) }
        return nil
    }

    @inline(__always)
    mutating func readKind() -> Kind? {
        kind
    }
}

/// What one event of a TCP or UDP flow answered, and how much the flow's
/// queue and early data grew with it.
struct StreamEventRun {
    var action: FlowAction
    var kind: TunnelFlowKind
    var queuedChange: Int
    var earlyChange: Int
    var needs: FlowTable.KnownNeeds
}

extension FlowTable {
    /// What a flow needs after an event (`TunnelMultiplexer.reconcile`),
    /// true while the table's `edits` are still `edits`. Plain values: passed
    /// on without the action, which would be copied with them.
    struct KnownNeeds {
        var needs: FlowState.Needs
        fileprivate(set) var edits: UInt = 0
    }
}

/// The tunnel's flows by identifier, in one table: an identifier names one
/// flow at most, of one kind. An event looks its flow up once (`find`) and
/// changes it in place where it was found; what runs after the event asks
/// again only if the table entered or removed a flow meanwhile.
struct FlowTable {
    typealias Index = [TunnelConnectionIdentifier: FlowEntry].Index

    /// Where a flow was found, and the table's layout then.
    struct Found {
        let index: Index
        fileprivate let layout: UInt
    }

    private(set) var entries: [TunnelConnectionIdentifier: FlowEntry] = [:]
    /// Changes whenever a flow enters or leaves: the dictionary moves entries
    /// as it grows and as it removes one, and an index of before may name
    /// another flow, or none.
    private var layout: UInt = 0
    /// Changes with every event run and every flow that enters or leaves:
    /// what an event's answer says of its flow holds while it is unchanged.
    private var edits: UInt = 0

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    func contains(_ identifier: TunnelConnectionIdentifier) -> Bool {
        entries.index(forKey: identifier) != nil
    }

    /// Where the flow is; valid while no flow enters or leaves the table.
    @inline(__always)
    func find(_ identifier: TunnelConnectionIdentifier) -> Found? {
        entries.index(forKey: identifier).map { Found(index: $0, layout: layout) }
    }

    /// `earlier`, where the flow was found before, if the table kept its
    /// layout since; else where it is now, if anywhere. Each call below that
    /// takes one is one access to the table, the lookup included.
    @inline(__always)
    func find(_ identifier: TunnelConnectionIdentifier, after earlier: Found?) -> Found? {
        if let earlier, earlier.layout == layout { return earlier }
        return find(identifier)
    }

    /// The flow's kind (nil: being modified) and where it is; nil for none.
    @inline(__always)
    mutating func kind(_ identifier: TunnelConnectionIdentifier) -> (FlowEntry.Kind?, Found)? {
        guard let found = find(identifier) else { return nil }
        return (entries.values[found.index].readKind(), found)
    }

    /// The TCP or UDP flow with this identifier; nil for none, or an IP flow.
    func stream(_ identifier: TunnelConnectionIdentifier) -> FlowState? {
        entries[identifier]?.stream
    }

    /// The IP flow with this identifier; nil for none, or a TCP or UDP flow.
    func ip(_ identifier: TunnelConnectionIdentifier) -> IPFlowState? {
        entries[identifier]?.ip
    }

    /// The TCP or UDP flow's kind, and where it is; nil for none, or an IP flow.
    @inline(__always)
    mutating func streamKind(_ identifier: TunnelConnectionIdentifier) -> (TunnelFlowKind, Found)? {
        guard let found = find(identifier), let kind = entries.values[found.index].readStream({ $0.kind }) else { return nil }
        return (kind, found)
    }

    /// What `TunnelMultiplexer.reconcile` asks of the TCP or UDP flow, and
    /// where it is; nil for none, or an IP flow. `known`: an event's answer,
    /// whose `needs` serve while no event or change came since; else they
    /// are read.
    @inline(__always)
    mutating func needs(_ identifier: TunnelConnectionIdentifier, after earlier: Found?, known: KnownNeeds? = nil) -> (FlowState.Needs, Found)? {
        guard let found = find(identifier, after: earlier) else { return nil }
        if let known, known.edits == edits { return (known.needs, found) }
        guard let needs = entries.values[found.index].readStream({ $0.needs }) else { return nil }
        return (needs, found)
    }

    /// Whether the IP flow wants a turn; false for none, or a TCP or UDP flow.
    @inline(__always)
    mutating func ipHasSomethingToSend(_ identifier: TunnelConnectionIdentifier, after earlier: Found?) -> Bool {
        guard let found = find(identifier, after: earlier) else { return false }
        return entries.values[found.index].readIP({ $0.hasSomethingToSend }) ?? false
    }

    /// Enters a new flow. Returns false, and changes nothing, when the
    /// identifier already names a flow (of either kind).
    @discardableResult
    mutating func insert(_ entry: FlowEntry, for identifier: TunnelConnectionIdentifier) -> Bool {
        guard entries.index(forKey: identifier) == nil else { return false }
        entries[identifier] = entry
        layout &+= 1
        edits &+= 1
        return true
    }

    @discardableResult
    mutating func remove(_ identifier: TunnelConnectionIdentifier) -> FlowEntry? {
        guard let removed = entries.removeValue(forKey: identifier) else { return nil }
        layout &+= 1
        edits &+= 1
        return removed
    }

    mutating func removeAll() {
        entries.removeAll()
        layout &+= 1
        edits &+= 1
    }

    /// Runs `event` on the TCP or UDP flow, in place, found where `earlier`
    /// says if it still can be; nil, and nothing run, for none or an IP flow.
    @inline(__always)
    mutating func runStream(
        _ identifier: TunnelConnectionIdentifier, after earlier: Found?, _ event: (inout FlowState) -> FlowAction
    ) -> (StreamEventRun, Found)? {
        guard let found = find(identifier, after: earlier), var run = entries.values[found.index].runStream(event) else { return nil }
        edits &+= 1
        run.needs.edits = edits
        return (consume run, found)
    }

    /// Runs `event` on the IP flow, in place; nil, and nothing run, for none or a TCP or UDP flow.
    @inline(__always)
    mutating func runIP(
        _ identifier: TunnelConnectionIdentifier, after earlier: Found?, _ event: (inout IPFlowState) -> IPFlowAction
    ) -> (action: IPFlowAction, queuedChange: Int, found: Found)? {
        guard let found = find(identifier, after: earlier), let run = entries.values[found.index].runIP(event) else { return nil }
        edits &+= 1
        return (run.action, run.queuedChange, found)
    }
}
