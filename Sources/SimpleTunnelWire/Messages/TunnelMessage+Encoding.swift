import NIOCore

extension TunnelMessage {
    /// The message as dictionary entries in a fixed order (identifier, command,
    /// then the command's keys), ready for `BinaryPropertyListWriter`.
    ///
    /// `port` is always an integer, as Apple's client sends it and as Apple's
    /// server alone reads it (PROTOCOL.md A2).
    public var propertyListEntries: [(key: String, value: PropertyListValue)] {
        var entries: [(key: String, value: PropertyListValue)] = [
            (TunnelMessageKey.identifier.rawValue, PropertyListValue(identifier)),
            (TunnelMessageKey.command.rawValue, PropertyListValue(command.rawValue)),
        ]
        entries.reserveCapacity(6)
        func add(_ key: TunnelMessageKey, _ value: PropertyListValue) {
            entries.append((key.rawValue, value))
        }
        switch self {
        case .data(_, let payload, let endpoint):
            add(.data, .data(payload))
            if let endpoint {
                add(.host, .string(endpoint.host))
                add(.port, PropertyListValue(endpoint.port))
            }
        case .suspend, .resume:
            break
        case .close(_, let direction):
            add(.closeDirection, PropertyListValue(direction.rawValue))
        case .dns(_, let packet, let source):
            add(.dnsPacket, .data(packet))
            if let source {
                add(.dnsPacketSource, .string(source))
            }
        case .open(_, let request):
            switch request {
            case .tcp(let endpoint):
                add(.tunnelType, PropertyListValue(TunnelLayer.app.rawValue))
                add(.appProxyFlowType, PropertyListValue(AppProxyFlowKind.tcp.rawValue))
                add(.host, .string(endpoint.host))
                add(.port, PropertyListValue(endpoint.port))
            case .udp:
                add(.tunnelType, PropertyListValue(TunnelLayer.app.rawValue))
                add(.appProxyFlowType, PropertyListValue(AppProxyFlowKind.udp.rawValue))
            case .ip(let offersSuperPackets):
                add(.tunnelType, PropertyListValue(TunnelLayer.ip.rawValue))
                if offersSuperPackets {
                    add(.superPackets, PropertyListValue(1))
                }
            }
        case .openResult(_, let result, let configuration, let detail):
            add(.resultCode, PropertyListValue(result.rawValue))
            if let configuration {
                add(.configuration, .dictionary(configuration))
            }
            if let detail {
                add(.resultDetail, PropertyListValue(detail.rawValue))
            }
        case .packets(_, let packets):
            add(.packets, .array(packets.map { .data($0.bytes) }))
            add(.protocols, .array(packets.map { PropertyListValue($0.protocolNumber) }))
            // Only on a flow that agreed to super-packets (PROTOCOL.md B8); Apple's peers never see it.
            if packets.contains(where: { $0.segmentSize != 0 }) {
                add(.segmentSizes, .array(packets.map { PropertyListValue(Int($0.segmentSize)) }))
            }
        case .fetchConfiguration(_, let configuration):
            if let configuration {
                add(.configuration, .dictionary(configuration))
            }
        case .authenticate(let login, let password, let offersRetryLater):
            add(.login, .string(login))
            add(.password, .string(password))
            // Only from a client that takes result 4 as "try again later" (PROTOCOL.md B2).
            if offersRetryLater {
                add(.retryLater, PropertyListValue(1))
            }
        case .authenticateResult(let result, let detail):
            add(.resultCode, PropertyListValue(result.rawValue))
            if let detail {
                add(.resultDetail, PropertyListValue(detail.rawValue))
            }
        }
        return entries
    }

    /// The message as a property-list value (for tests and diagnostics).
    public var propertyList: PropertyListValue {
        .dictionary(Dictionary(propertyListEntries, uniquingKeysWith: { first, _ in first }))
    }
}
