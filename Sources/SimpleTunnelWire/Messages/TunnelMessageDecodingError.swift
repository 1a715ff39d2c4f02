/// Why a property list is not a message we can act on, and so what to do
/// about it (PROTOCOL.md A6, B5). The disposition is decided here, once, as
/// data; the tunnel handler only carries it out.
public struct TunnelMessageDecodingError: Error, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case notADictionary = "message.notADictionary"
        case missingCommand = "message.missingCommand"
        case commandNotInteger = "message.commandNotInteger"
        case unknownCommand = "message.unknownCommand"
        case missingIdentifier = "message.missingIdentifier"
        case identifierNotInteger = "message.identifierNotInteger"
        case identifierOutOfRange = "message.identifierOutOfRange"
        case missingKey = "message.missingKey"
        case wrongType = "message.wrongType"
        case invalidValue = "message.invalidValue"
    }

    public var kind: Kind
    /// The command, when it was a known one.
    public var command: TunnelCommand?
    /// The identifier, when it was a valid one.
    public var identifier: TunnelConnectionIdentifier?
    /// The offending key, for the kinds about a key.
    public var key: String?
    /// What was wrong, for people.
    public var detail: String

    public init(kind: Kind, command: TunnelCommand? = nil, identifier: TunnelConnectionIdentifier? = nil, key: String? = nil, detail: String) {
        self.kind = kind
        self.command = command
        self.identifier = identifier
        self.key = key
        self.detail = detail
    }

    public var disposition: TunnelMessageDisposition {
        switch kind {
        case .notADictionary, .missingCommand, .commandNotInteger:
            return .closeTunnel
        case .unknownCommand:
            return .ignore
        case .missingIdentifier, .identifierNotInteger, .identifierOutOfRange:
            return .drop
        case .missingKey, .wrongType, .invalidValue:
            if command == .open, let identifier {
                return .openFailure(identifier: identifier)
            }
            return .drop
        }
    }

    public var description: String {
        var context: [String] = []
        if let command { context.append("command \(command)") }
        if let identifier { context.append("identifier \(identifier)") }
        let prefix = context.isEmpty ? "" : " (\(context.joined(separator: ", ")))"
        return "\(kind.rawValue)\(prefix): \(detail)"
    }
}

/// What the receiver of an undecodable message does.
public enum TunnelMessageDisposition: Sendable, Hashable {
    /// The peer does not speak the protocol: end the tunnel.
    case closeTunnel
    /// A command from a newer peer: ignore it quietly.
    case ignore
    /// Cannot be acted on or answered: drop it and log.
    case drop
    /// A malformed `open`: answer `openResult` 1 (invalid parameter).
    case openFailure(identifier: TunnelConnectionIdentifier)
}
