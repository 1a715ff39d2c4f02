/// The tunnel's flows by identifier, each kind with its own machine: TCP and
/// UDP flows' `FlowState`s, IP flows' `IPFlowState`s. An identifier is in one
/// of them at most.
struct FlowTable {
    var data: [TunnelConnectionIdentifier: FlowState] = [:]
    var ip: [TunnelConnectionIdentifier: IPFlowState] = [:]

    var count: Int { data.count + ip.count }
    var isEmpty: Bool { data.isEmpty && ip.isEmpty }

    func contains(_ identifier: TunnelConnectionIdentifier) -> Bool {
        data[identifier] != nil || ip[identifier] != nil
    }

    mutating func removeAll() {
        data.removeAll()
        ip.removeAll()
    }
}
