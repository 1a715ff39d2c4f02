/// One flow of the tunnel, with the machine of its kind: a TCP or UDP flow's
/// `FlowState`, an IP flow's `IPFlowState`.
enum FlowEntry {
    case stream(FlowState)
    case ip(IPFlowState)
    /// Only inside `FlowTable.withStream` and `withIP`, while an event changes
    /// the machine in place (so its queue has one owner and is not copied);
    /// no event ever starts or ends in it.
    case modifying

    enum Kind: Hashable {
        case stream, ip
    }

    var stream: FlowState? {
        if case .stream(let flow) = self { return flow }
        return nil
    }

    var ip: IPFlowState? {
        if case .ip(let flow) = self { return flow }
        return nil
    }

    var kind: Kind? {
        switch self {
        case .stream: .stream
        case .ip: .ip
        case .modifying: nil
        }
    }
}

/// The tunnel's flows by identifier, in one table: an identifier names one
/// flow at most, of one kind. An event looks its flow up once, by
/// `index(of:)`, and changes it in place at that index.
struct FlowTable {
    typealias Index = [TunnelConnectionIdentifier: FlowEntry].Index

    private(set) var entries: [TunnelConnectionIdentifier: FlowEntry] = [:]

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    func contains(_ identifier: TunnelConnectionIdentifier) -> Bool {
        entries.index(forKey: identifier) != nil
    }

    /// Where the flow is, valid until the table next changes.
    func index(of identifier: TunnelConnectionIdentifier) -> Index? {
        entries.index(forKey: identifier)
    }

    func kind(at index: Index) -> FlowEntry.Kind? {
        entries.values[index].kind
    }

    /// The TCP or UDP flow with this identifier; nil for none, or an IP flow.
    func stream(_ identifier: TunnelConnectionIdentifier) -> FlowState? {
        entries[identifier]?.stream
    }

    /// The IP flow with this identifier; nil for none, or a TCP or UDP flow.
    func ip(_ identifier: TunnelConnectionIdentifier) -> IPFlowState? {
        entries[identifier]?.ip
    }

    /// Enters a new flow. Returns false, and changes nothing, when the
    /// identifier already names a flow (of either kind).
    @discardableResult
    mutating func insert(_ entry: FlowEntry, for identifier: TunnelConnectionIdentifier) -> Bool {
        guard entries.index(forKey: identifier) == nil else { return false }
        entries[identifier] = entry
        return true
    }

    @discardableResult
    mutating func remove(_ identifier: TunnelConnectionIdentifier) -> FlowEntry? {
        entries.removeValue(forKey: identifier)
    }

    mutating func removeAll() {
        entries.removeAll()
    }

    /// Runs `body` on the TCP or UDP flow at `index`, in place; nil, and
    /// nothing run, when the flow there is of another kind.
    @inline(__always)
    mutating func withStream<Result>(at index: Index, _ body: (inout FlowState) -> Result) -> Result? {
        inPlace(at: index, { $0.stream }, FlowEntry.stream, body)
    }

    /// Runs `body` on the IP flow at `index`, in place; nil, and nothing run,
    /// when the flow there is of another kind.
    @inline(__always)
    mutating func withIP<Result>(at index: Index, _ body: (inout IPFlowState) -> Result) -> Result? {
        inPlace(at: index, { $0.ip }, FlowEntry.ip, body)
    }

    @inline(__always)
    private mutating func inPlace<Machine, Result>(
        at index: Index, _ machine: (FlowEntry) -> Machine?, _ entry: (Machine) -> FlowEntry, _ body: (inout Machine) -> Result
    ) -> Result? {
        guard var flow = machine(entries.values[index]) else { return nil }
        // Out of the table while it changes: the table's copy would make the queue's buffer shared, and copied.
        entries.values[index] = .modifying
        defer { entries.values[index] = entry(flow) }
        return body(&flow)
    }
}
