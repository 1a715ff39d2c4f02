import NIOCore

extension TunnelMessage {
    /// Reads a message from its property list, checking every key the command
    /// needs (PROTOCOL.md A2, A6). Keys a command does not use are ignored.
    public init(propertyList: PropertyListValue) throws(TunnelMessageDecodingError) {
        guard case .dictionary(let entries) = propertyList else {
            throw TunnelMessageDecodingError(
                kind: .notADictionary,
                detail: "the top object is a \(propertyList.typeName), not a dictionary"
            )
        }
        let command = try Self.command(in: entries)
        let identifier = try Self.identifier(in: entries, command: command)
        let fields = MessageFields(entries: entries, command: command, identifier: identifier)
        self = try fields.message()
    }

    private static func command(in entries: [String: PropertyListValue]) throws(TunnelMessageDecodingError) -> TunnelCommand {
        let key = TunnelMessageKey.command.rawValue
        guard let value = entries[key] else {
            throw TunnelMessageDecodingError(kind: .missingCommand, key: key, detail: "the message has no `command`")
        }
        guard case .integer(let number) = value else {
            throw TunnelMessageDecodingError(
                kind: .commandNotInteger, key: key,
                detail: "`command` is a \(value.typeName), expected an integer"
            )
        }
        guard let command = Int(exactly: number).flatMap(TunnelCommand.init(rawValue:)) else {
            let identifier = entries[TunnelMessageKey.identifier.rawValue]?.integerValue.flatMap { Int64(exactly: $0) }
            throw TunnelMessageDecodingError(
                kind: .unknownCommand, identifier: identifier, key: key,
                detail: "command \(number) is not one this server knows (1-11)"
            )
        }
        return command
    }

    private static func identifier(
        in entries: [String: PropertyListValue],
        command: TunnelCommand
    ) throws(TunnelMessageDecodingError) -> TunnelConnectionIdentifier {
        let key = TunnelMessageKey.identifier.rawValue
        guard let value = entries[key] else {
            throw TunnelMessageDecodingError(kind: .missingIdentifier, command: command, key: key, detail: "the message has no `identifier`")
        }
        guard case .integer(let number) = value else {
            throw TunnelMessageDecodingError(
                kind: .identifierNotInteger, command: command, key: key,
                detail: "`identifier` is a \(value.typeName), expected an integer"
            )
        }
        guard let identifier = Int64(exactly: number) else {
            throw TunnelMessageDecodingError(
                kind: .identifierOutOfRange, command: command, key: key,
                detail: "`identifier` \(number) does not fit in a signed 64-bit integer"
            )
        }
        return identifier
    }
}

/// A message dictionary whose command and identifier are known, with typed
/// accessors that throw errors naming the key and what was wrong with it.
private struct MessageFields {
    let entries: [String: PropertyListValue]
    let command: TunnelCommand
    let identifier: TunnelConnectionIdentifier

    func message() throws(TunnelMessageDecodingError) -> TunnelMessage {
        switch command {
        case .data:
            return .data(identifier: identifier, payload: try required(.data, data), endpoint: try endpoint(required: false))
        case .suspend:
            return .suspend(identifier: identifier)
        case .resume:
            return .resume(identifier: identifier)
        case .close:
            let direction = try enumeration(.closeDirection, TunnelConnectionCloseDirection.self) ?? .all
            return .close(identifier: identifier, direction: direction)
        case .dns:
            return .dns(identifier: identifier, packet: try required(.dnsPacket, data), source: try string(.dnsPacketSource))
        case .open:
            return .open(identifier: identifier, request: try openRequest())
        case .openResult:
            return .openResult(
                identifier: identifier,
                result: try required(.resultCode) { key throws(TunnelMessageDecodingError) in try enumeration(key, TunnelConnectionOpenResult.self) },
                configuration: try dictionary(.configuration),
                // A detail this side does not know is left out, not refused: it only refines the result.
                detail: try integer(.resultDetail).flatMap { Int(exactly: $0) }.flatMap(TunnelOpenResultDetail.init(rawValue:))
            )
        case .packets:
            return .packets(identifier: identifier, packets: try packets())
        case .fetchConfiguration:
            return .fetchConfiguration(identifier: identifier, configuration: try dictionary(.configuration))
        case .authenticate:
            return .authenticate(
                login: try required(.login, string), password: try required(.password, string),
                offersRetryLater: (try integer(.retryLater) ?? 0) != 0)
        case .authenticateResult:
            let result = try required(.resultCode) { key throws(TunnelMessageDecodingError) in try enumeration(key, TunnelConnectionOpenResult.self) }
            guard result == .success || result == .refused || result == .timeout else {
                throw error(
                    .invalidValue, .resultCode, "authenticateResult carries 0 (accepted), 3 (refused) or 4 (try again later), not \(result.rawValue)")
            }
            // A detail this side does not know is left out: the refusal stands without it.
            let detail = try integer(.resultDetail).flatMap { Int(exactly: $0) }.flatMap(TunnelLoginRefusalDetail.init(rawValue:))
            return .authenticateResult(result, detail: result == .refused ? detail : nil)
        }
    }

    // MARK: Composite fields

    private func openRequest() throws(TunnelMessageDecodingError) -> TunnelOpenRequest {
        if identifier == 0 {
            throw error(.invalidValue, .identifier, "identifier 0 is reserved for tunnel-level messages and cannot be opened")
        }
        let layer = try required(.tunnelType) { key throws(TunnelMessageDecodingError) in try enumeration(key, TunnelLayer.self) }
        switch layer {
        case .ip:
            // Any value but 0 offers; a mistyped one is an error like any other key's.
            return .ip(offersSuperPackets: (try integer(.superPackets) ?? 0) != 0)
        case .app:
            let kind = try required(.appProxyFlowType) { key throws(TunnelMessageDecodingError) in try enumeration(key, AppProxyFlowKind.self) }
            switch kind {
            case .udp:
                return .udp
            case .tcp:
                guard let endpoint = try endpoint(required: true) else {
                    throw error(.missingKey, .host, "a TCP open needs `host` and `port`")
                }
                return .tcp(endpoint)
            }
        }
    }

    /// `host` and `port` together: both present, or (when not required) both absent.
    private func endpoint(required isRequired: Bool) throws(TunnelMessageDecodingError) -> TunnelEndpoint? {
        let host = try string(.host)
        let port = try port()
        switch (host, port) {
        case (nil, nil) where !isRequired:
            return nil
        case (let host?, let port?):
            // Checked here, once: the policy, the resolver and the log then all see the same host.
            do {
                return try TunnelEndpoint(validatingHost: host, port: port)
            } catch {
                throw self.error(.invalidValue, .host, "`host`: \(error)")
            }
        case (nil, _):
            throw error(.missingKey, .host, "`host` is missing")
        case (_, nil):
            throw error(.missingKey, .port, "`port` is missing")
        }
    }

    /// `port`: an integer, or (as Apple's TCP open sends it) a string of digits.
    private func port() throws(TunnelMessageDecodingError) -> Int? {
        let key = TunnelMessageKey.port
        switch entries[key.rawValue] {
        case nil:
            return nil
        case .integer(let number):
            guard (1...65535).contains(number) else {
                throw error(.invalidValue, key, "`port` \(number) is outside 1-65535")
            }
            return Int(number)
        case .string(let text):
            let digits = text.utf8
            guard (1...5).contains(digits.count), digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let number = Int(text), (1...65535).contains(number)
            else {
                throw error(.invalidValue, key, "`port` \"\(text.prefix(16))\" is not a number from 1 to 65535")
            }
            return number
        case let value?:
            throw error(.wrongType, key, "`port` is a \(value.typeName), expected an integer or a string of digits")
        }
    }

    private func packets() throws(TunnelMessageDecodingError) -> [TunnelPacket] {
        let packets = try required(.packets, array)
        let protocols = try required(.protocols, array)
        guard packets.count == protocols.count else {
            throw error(.invalidValue, .protocols, "\(packets.count) packets but \(protocols.count) protocol numbers")
        }
        let sizes = try segmentSizes(count: packets.count)
        var result: [TunnelPacket] = []
        result.reserveCapacity(packets.count)
        for (index, (packet, number)) in zip(packets, protocols).enumerated() {
            guard case .data(let bytes) = packet else {
                throw error(.wrongType, .packets, "`packets` holds a \(packet.typeName), expected data")
            }
            guard case .integer(let protocolNumber) = number else {
                throw error(.wrongType, .protocols, "`protocols` holds a \(number.typeName), expected an integer")
            }
            guard let narrowed = Int64(exactly: protocolNumber) else {
                throw error(.invalidValue, .protocols, "protocol number \(protocolNumber) does not fit in 64 bits")
            }
            result.append(TunnelPacket(bytes: bytes, protocolNumber: narrowed, segmentSize: sizes?[index] ?? 0))
        }
        return result
    }

    /// `segment-sizes` (PROTOCOL.md B8): absent, or one size from 0 to 65535 per packet.
    private func segmentSizes(count: Int) throws(TunnelMessageDecodingError) -> [UInt16]? {
        guard let values = try array(.segmentSizes) else { return nil }
        guard values.count == count else {
            throw error(.invalidValue, .segmentSizes, "\(count) packets but \(values.count) segment sizes")
        }
        var sizes: [UInt16] = []
        sizes.reserveCapacity(count)
        for value in values {
            guard case .integer(let number) = value else {
                throw error(.wrongType, .segmentSizes, "`segment-sizes` holds a \(value.typeName), expected an integer")
            }
            guard let size = UInt16(exactly: number) else {
                throw error(.invalidValue, .segmentSizes, "segment size \(number) is outside 0-65535")
            }
            sizes.append(size)
        }
        return sizes
    }

    // MARK: Typed accessors: nil when absent, an error when of the wrong type

    private func required<Value>(
        _ key: TunnelMessageKey,
        _ read: (TunnelMessageKey) throws(TunnelMessageDecodingError) -> Value?
    ) throws(TunnelMessageDecodingError) -> Value {
        guard let value = try read(key) else {
            throw error(.missingKey, key, "`\(key.rawValue)` is missing")
        }
        return value
    }

    private func enumeration<Value: RawRepresentable>(
        _ key: TunnelMessageKey,
        _ type: Value.Type
    ) throws(TunnelMessageDecodingError) -> Value? where Value.RawValue == Int {
        guard let number = try integer(key) else { return nil }
        guard let value = Int(exactly: number).flatMap(Value.init(rawValue:)) else {
            throw error(.invalidValue, key, "`\(key.rawValue)` \(number) is not a known value")
        }
        return value
    }

    private func integer(_ key: TunnelMessageKey) throws(TunnelMessageDecodingError) -> Int128? {
        try typed(key, .integer) { $0.integerValue }
    }

    private func string(_ key: TunnelMessageKey) throws(TunnelMessageDecodingError) -> String? {
        try typed(key, .string) { $0.stringValue }
    }

    private func data(_ key: TunnelMessageKey) throws(TunnelMessageDecodingError) -> ByteBuffer? {
        try typed(key, .data) { $0.dataValue }
    }

    private func array(_ key: TunnelMessageKey) throws(TunnelMessageDecodingError) -> [PropertyListValue]? {
        try typed(key, .array) { $0.arrayValue }
    }

    private func dictionary(_ key: TunnelMessageKey) throws(TunnelMessageDecodingError) -> [String: PropertyListValue]? {
        try typed(key, .dictionary) { $0.dictionaryValue }
    }

    private func typed<Value>(
        _ key: TunnelMessageKey,
        _ expected: PropertyListTypeName,
        _ extract: (PropertyListValue) -> Value?
    ) throws(TunnelMessageDecodingError) -> Value? {
        guard let value = entries[key.rawValue] else { return nil }
        guard let extracted = extract(value) else {
            throw error(.wrongType, key, "`\(key.rawValue)` is a \(value.typeName), expected \(expected)")
        }
        return extracted
    }

    private func error(_ kind: TunnelMessageDecodingError.Kind, _ key: TunnelMessageKey, _ detail: String) -> TunnelMessageDecodingError {
        TunnelMessageDecodingError(kind: kind, command: command, identifier: identifier, key: key.rawValue, detail: detail)
    }
}
