import NIOCore

// The per-flow messages (open, openResult, close, data...) hold only
// integers, strings and data, so they are written by `ScalarDictionaryWriter`
// from precomputed key bytes, without building `propertyListEntries`. The
// bytes are the same (TunnelMessageScalarEncodingTests).

extension TunnelMessage {
    /// Offers the message's values to `sink` in the order of
    /// `propertyListEntries` and returns the shape of its keys; nil for a
    /// message with a nested value (packets, a configuration), which takes the
    /// general writer (what `sink` got is then meaningless).
    func offerScalarValues<Sink: ScalarValueSink>(to sink: inout Sink) -> ScalarDictionaryShape? {
        sink.integer(identifier)
        sink.integer(Int64(command.rawValue))
        switch self {
        case .data(_, let payload, let endpoint):
            sink.data(payload)
            guard let endpoint else { return ScalarShapes.data }
            sink.string(endpoint.host)
            sink.integer(Int64(endpoint.port))
            return ScalarShapes.datagram
        case .suspend, .resume, .fetchConfiguration(_, .none):
            return ScalarShapes.bare
        case .close(_, let direction):
            sink.integer(Int64(direction.rawValue))
            return ScalarShapes.close
        case .dns(_, let packet, let source):
            sink.data(packet)
            guard let source else { return ScalarShapes.dnsQuery }
            sink.string(source)
            return ScalarShapes.dnsAnswer
        case .open(_, .tcp(let endpoint)):
            sink.integer(Int64(TunnelLayer.app.rawValue))
            sink.integer(Int64(AppProxyFlowKind.tcp.rawValue))
            sink.string(endpoint.host)
            sink.integer(Int64(endpoint.port))  // a number: Apple's server reads nothing else (PROTOCOL.md A2)
            return ScalarShapes.openTCP
        case .open(_, .udp):
            sink.integer(Int64(TunnelLayer.app.rawValue))
            sink.integer(Int64(AppProxyFlowKind.udp.rawValue))
            return ScalarShapes.openUDP
        case .open(_, .ip(offersSuperPackets: false)):
            sink.integer(Int64(TunnelLayer.ip.rawValue))
            return ScalarShapes.openIP
        case .openResult(_, let result, .none, .some(let detail)):
            sink.integer(Int64(result.rawValue))
            sink.integer(Int64(detail.rawValue))
            return ScalarShapes.resultWithDetail
        case .openResult(_, let result, .none, .none), .authenticateResult(let result, .none):
            sink.integer(Int64(result.rawValue))
            return ScalarShapes.result
        case .authenticate(let login, let password, let offersRetryLater):
            sink.string(login)
            sink.string(password)
            guard offersRetryLater else { return ScalarShapes.authenticate }
            sink.integer(1)
            return ScalarShapes.authenticateOfferingRetry
        case .packets, .openResult(_, _, .some, _), .fetchConfiguration(_, .some), .open(_, .ip(offersSuperPackets: true)), .authenticateResult(_, .some):
            return nil
        }
    }
}

/// The key lists of the scalar messages, each after `identifier` and `command`.
enum ScalarShapes {
    static let bare = shape()
    static let data = shape(.data)
    static let datagram = shape(.data, .host, .port)
    static let close = shape(.closeDirection)
    static let dnsQuery = shape(.dnsPacket)
    static let dnsAnswer = shape(.dnsPacket, .dnsPacketSource)
    static let openTCP = shape(.tunnelType, .appProxyFlowType, .host, .port)
    static let openUDP = shape(.tunnelType, .appProxyFlowType)
    static let openIP = shape(.tunnelType)
    static let result = shape(.resultCode)
    static let resultWithDetail = shape(.resultCode, .resultDetail)
    static let authenticate = shape(.login, .password)
    static let authenticateOfferingRetry = shape(.login, .password, .retryLater)

    /// The messages `ScalarFrameReader` reads, and the command each shape's keys belong to.
    enum Kind {
        case data, datagram, bare, close, openTCP, openResult, openResultWithDetail

        /// Whether a message of this shape that carries `command` is the reader's to read.
        func carries(_ command: TunnelCommand) -> Bool {
            switch self {
            case .data, .datagram: return command == .data
            case .bare: return command == .suspend || command == .resume
            case .close: return command == .close
            case .openTCP: return command == .open
            case .openResult, .openResultWithDetail: return command == .openResult
            }
        }
    }

    struct Readable {
        let kind: Kind
        let shape: ScalarDictionaryShape
        var keyCount: Int { shape.keyCount }
    }

    /// The shapes `ScalarFrameReader` reads (at most 6 keys), most frequent first.
    static let readable: [Readable] = [
        Readable(kind: .data, shape: data), Readable(kind: .openTCP, shape: openTCP), Readable(kind: .openResult, shape: result),
        Readable(kind: .close, shape: close), Readable(kind: .openResultWithDetail, shape: resultWithDetail),
        Readable(kind: .datagram, shape: datagram), Readable(kind: .bare, shape: bare),
    ]

    private static func shape(_ keys: TunnelMessageKey...) -> ScalarDictionaryShape {
        ScalarDictionaryShape(keys: ([.identifier, .command] + keys).map(\.rawValue))
    }
}
