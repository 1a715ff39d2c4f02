/// A fault in what a peer sent that ends its tunnel (PROTOCOL.md B5), with a
/// stable `kind` for logs, tests and fixtures.
public enum TunnelWireError: Error, Hashable, CustomStringConvertible {
    case frame(TunnelFrameError)
    case propertyList(PropertyListError)
    case message(TunnelMessageDecodingError)

    /// e.g. `frame.lengthTooLarge`, `plist.invalid`, `message.missingCommand`.
    public var kind: String {
        switch self {
        case .frame(let error): return error.kind
        case .propertyList: return "plist.invalid"
        case .message(let error): return error.kind.rawValue
        }
    }

    public var description: String {
        switch self {
        case .frame(let error): return error.description
        case .propertyList(let error): return error.description
        case .message(let error): return error.description
        }
    }
}

/// A frame whose length prefix is out of range, or a stream that ended mid-frame.
public enum TunnelFrameError: Error, Hashable, CustomStringConvertible {
    case lengthTooSmall(Int)
    case lengthTooLarge(Int)
    case truncated(expected: Int, received: Int)

    public var kind: String {
        switch self {
        case .lengthTooSmall: return "frame.lengthTooSmall"
        case .lengthTooLarge: return "frame.lengthTooLarge"
        case .truncated: return "frame.truncated"
        }
    }

    public var description: String {
        switch self {
        case .lengthTooSmall(let length):
            return "frame length \(length) is below the minimum of \(TunnelWireLimits.minimumFrameLength) (the length counts its own 4 bytes)"
        case .lengthTooLarge(let length):
            return "frame length \(length) exceeds the maximum of \(TunnelWireLimits.maximumFrameLength)"
        case .truncated(let expected, let received):
            return "the stream ended inside a frame: \(received) of \(expected) bytes arrived"
        }
    }
}
